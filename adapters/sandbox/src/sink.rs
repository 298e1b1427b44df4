//! Handing lines to a job's log channel without ever making the output reader wait: a
//! script writing megabytes per second must not block on a full pipe because the receiver
//! (which stores lines one by one) is slower.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::{LogLine, Stream};

/// Bytes of lines waiting for the receiver beyond which new lines are dropped (and
/// counted in a marker line) rather than held.
const PENDING_LIMIT: usize = 8 * 1024 * 1024;
/// What a line costs besides its text, so that floods of empty lines are bounded too.
const LINE_OVERHEAD: usize = 64;
/// Once the job has ended, how long the receiver may take no line at all before the
/// lines still queued are given up (a receiver that only reads after `run` returns would
/// otherwise hold `run` forever).
const STALL_LIMIT: Duration = Duration::from_secs(5);

/// The reader's end: queues lines for the forwarder, dropping them while the receiver is
/// more than [`PENDING_LIMIT`] behind.
#[derive(Debug, Clone)]
pub(crate) struct LogSink {
    queue: mpsc::UnboundedSender<LogLine>,
    pending: Arc<AtomicUsize>,
    dropped: usize,
    dropped_from: Stream,
}

/// The task moving queued lines into the log channel.
#[derive(Debug)]
pub(crate) struct Forwarder {
    task: JoinHandle<()>,
    /// Lines the receiver has taken so far, to tell a slow receiver from a stalled one.
    delivered: Arc<AtomicU64>,
}

/// A sink for `logs` and the task that forwards its lines; the task ends once every clone
/// of the sink is gone and the queue is empty (or the receiver is gone).
pub(crate) fn log_sink(logs: mpsc::Sender<LogLine>) -> (LogSink, Forwarder) {
    let (queue, mut lines) = mpsc::unbounded_channel::<LogLine>();
    let pending = Arc::new(AtomicUsize::new(0));
    let delivered = Arc::new(AtomicU64::new(0));
    let task = tokio::spawn({
        let (pending, delivered) = (Arc::clone(&pending), Arc::clone(&delivered));
        async move {
            while let Some(line) = lines.recv().await {
                pending.fetch_sub(cost(&line), Ordering::Relaxed);
                if logs.send(line).await.is_err() {
                    // Nobody is listening: dropping the queue makes later lines free.
                    return;
                }
                delivered.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let sink = LogSink {
        queue,
        pending,
        dropped: 0,
        dropped_from: Stream::Stdout,
    };
    (sink, Forwarder { task, delivered })
}

impl Forwarder {
    /// Waits until every queued line is in the channel, for as long as the receiver keeps
    /// taking lines; one that takes none for [`STALL_LIMIT`] loses the rest. Call it once
    /// every sink is gone.
    pub(crate) async fn drain(mut self) {
        let mut seen = self.delivered.load(Ordering::Relaxed);
        loop {
            if tokio::time::timeout(STALL_LIMIT, &mut self.task)
                .await
                .is_ok()
            {
                return;
            }
            let now = self.delivered.load(Ordering::Relaxed);
            if now == seen {
                tracing::warn!("the log receiver stopped taking lines; the rest are dropped");
                self.task.abort();
                return;
            }
            seen = now;
        }
    }
}

impl LogSink {
    /// Queues `line`, or counts it as dropped when the receiver is too far behind.
    pub(crate) fn send(&mut self, line: LogLine) {
        if self.pending.load(Ordering::Relaxed) + cost(&line) > PENDING_LIMIT {
            self.dropped += 1;
            self.dropped_from = line.stream;
            return;
        }
        self.flush_dropped();
        self.enqueue(line);
    }

    /// Reports lines dropped since the last one queued.
    pub(crate) fn finish(&mut self) {
        self.flush_dropped();
    }

    fn flush_dropped(&mut self) {
        if self.dropped > 0 {
            let marker = LogLine {
                stream: self.dropped_from,
                line: format!(
                    "… [{} lines dropped: the log reader fell behind]",
                    self.dropped
                ),
            };
            self.dropped = 0;
            self.enqueue(marker);
        }
    }

    fn enqueue(&mut self, line: LogLine) {
        let cost = cost(&line);
        if self.queue.send(line).is_ok() {
            self.pending.fetch_add(cost, Ordering::Relaxed);
        }
    }
}

fn cost(line: &LogLine) -> usize {
    line.line.len() + LINE_OVERHEAD
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> LogLine {
        LogLine {
            stream: Stream::Stdout,
            line: text.into(),
        }
    }

    #[tokio::test]
    async fn lines_pass_in_order_and_the_forwarder_ends_with_the_sink() {
        let (tx, mut rx) = mpsc::channel(8);
        let (mut sink, forwarder) = log_sink(tx);
        sink.send(line("a"));
        sink.send(line("b"));
        sink.finish();
        drop(sink);
        forwarder.drain().await;
        assert_eq!(rx.recv().await.unwrap().line, "a");
        assert_eq!(rx.recv().await.unwrap().line, "b");
        assert!(rx.recv().await.is_none());
    }

    #[tokio::test]
    async fn a_stalled_receiver_costs_bounded_memory_and_the_loss_is_reported() {
        let (tx, mut rx) = mpsc::channel(1);
        let (mut sink, forwarder) = log_sink(tx);
        let text = "x".repeat(1000);
        let sent = 2 * PENDING_LIMIT / text.len();
        for _ in 0..sent {
            sink.send(line(&text));
        }
        assert!(sink.pending.load(Ordering::Relaxed) <= PENDING_LIMIT);
        sink.finish();
        drop(sink);
        let mut received = Vec::new();
        while let Some(l) = rx.recv().await {
            received.push(l.line);
        }
        forwarder.drain().await;
        let marker = received.last().unwrap();
        assert!(
            marker.ends_with("lines dropped: the log reader fell behind]"),
            "{marker}"
        );
        assert!(received.len() < sent);
    }

    #[tokio::test]
    async fn a_gone_receiver_is_not_an_error() {
        let (tx, rx) = mpsc::channel(1);
        drop(rx);
        let (mut sink, forwarder) = log_sink(tx);
        for _ in 0..10_000 {
            sink.send(line("lost"));
        }
        drop(sink);
        forwarder.drain().await;
    }

    #[tokio::test]
    async fn a_receiver_that_stops_reading_holds_the_end_only_so_long() {
        let (tx, _rx) = mpsc::channel(1);
        let (mut sink, forwarder) = log_sink(tx);
        for _ in 0..10 {
            sink.send(line("never read"));
        }
        drop(sink);
        // Let the one line that fits reach the channel: the stall starts after it.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = std::time::Instant::now();
        forwarder.drain().await;
        let waited = started.elapsed();
        assert!(
            waited >= STALL_LIMIT && waited < STALL_LIMIT * 3,
            "{waited:?}"
        );
    }
}
