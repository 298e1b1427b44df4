//! A child process for crash tests: commits one event to the outbox of the database given
//! as the first argument, prints its id, and then waits to be killed without relaying it.

use gatehouse_events::{Envelope, Event, NodeProgress};
use gatehouse_store::Store;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let url = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: outbox-writer DATABASE_URL"))?;
    let store = Store::connect(&url, gatehouse_tests::quick_retry()).await?;
    let event = Event::NodeProgress(NodeProgress {
        run_id: uuid::Uuid::now_v7(),
        node: "report".into(),
        attempt: 1,
        message: format!("written by pid {}", std::process::id()),
    });
    let envelope = Envelope::new("outbox-writer", &event, None)?;
    let mut tx = store.begin().await?;
    tx.append_outbox(&envelope).await?;
    tx.commit().await?;
    println!("{}", envelope.id);
    std::future::pending::<()>().await;
    Ok(())
}
