//! `brig completion bash|zsh|fish`: a completion script on stdout.

use clap_complete::Shell;

use crate::exit::Code;

#[derive(Debug, clap::Args)]
pub struct CompletionArgs {
    /// The shell to complete for.
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    pub shell: String,
}

pub fn run(args: CompletionArgs) -> Result<Code, crate::Error> {
    let shell = match args.shell.as_str() {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        _ => Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut super::command(), "brig", &mut script);
    super::print(String::from_utf8_lossy(&script))?;
    Ok(Code::Success)
}
