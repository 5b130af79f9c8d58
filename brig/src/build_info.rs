//! Build facts captured at compile time by `build.rs`.
