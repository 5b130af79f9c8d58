//! (placeholder, being written)

pub fn run(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("not written yet")
}
