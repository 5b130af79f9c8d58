//! A lab scenario file: parsing and its checks never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    if let Ok(scenario) = lab::scenario::Scenario::parse(text) {
        let rows: Vec<Option<String>> = match scenario.table() {
            Some(table) => table.rows.keys().cloned().map(Some).collect(),
            None => vec![None],
        };
        for row in rows {
            let _ = scenario.flatten(row.as_deref());
        }
    }
});
