//! The lab runner: `lab [FILTER] [libtest args…]`, normally started by
//! `cargo xtask lab`, which builds brig first and sets `LAB_BRIG`.

fn main() -> std::process::ExitCode {
    lab::runner::main()
}
