//! `fault run`: the proxy on the command line.

#[derive(Debug, clap::Args)]
pub struct RunArgs {}

#[derive(Debug, thiserror::Error)]
pub enum RunError {}

pub async fn run(_args: RunArgs) -> Result<(), RunError> {
    Ok(())
}
