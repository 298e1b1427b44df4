//! Reading a container's output from its attach stream.

use std::pin::Pin;

use bollard::container::LogOutput;
use futures::{Stream as FuturesStream, StreamExt};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::Stream;
use crate::output::Output;

/// The attach stream as bollard gives it.
pub(super) type AttachStream =
    Pin<Box<dyn FuturesStream<Item = Result<LogOutput, bollard::errors::Error>> + Send>>;

/// Reads `attached` to its end (the container stopped) or until `stop`, returning the
/// stdout tail. It never waits on anything but Docker, so the container never blocks on
/// its output.
pub(super) fn read(
    mut attached: AttachStream,
    mut output: Output,
    stop: CancellationToken,
) -> JoinHandle<Vec<u8>> {
    tokio::spawn(async move {
        loop {
            let chunk = tokio::select! {
                chunk = attached.next() => chunk,
                () = stop.cancelled() => break,
            };
            match chunk {
                Some(Ok(LogOutput::StdOut { message } | LogOutput::Console { message })) => {
                    output.push(Stream::Stdout, &message);
                }
                Some(Ok(LogOutput::StdErr { message })) => output.push(Stream::Stderr, &message),
                Some(Ok(LogOutput::StdIn { .. })) => {}
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "reading the container's output failed");
                    break;
                }
                None => break,
            }
        }
        output.finish()
    })
}
