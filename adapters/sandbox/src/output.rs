//! A job's output on its way out: split into lines for the log, its stdout tail kept.

use crate::Stream;
use crate::lines::LineSplitter;
use crate::sink::LogSink;
use crate::tail::Tail;

/// Everything a sandbox does with the bytes a job writes, whichever stream they come on.
#[derive(Debug)]
pub(crate) struct Output {
    sink: LogSink,
    stdout: LineSplitter,
    stderr: LineSplitter,
    tail: Tail,
}

impl Output {
    /// Sends lines to `sink` and keeps the last `tail` bytes of stdout.
    pub(crate) fn new(sink: LogSink, tail: usize) -> Self {
        Self {
            sink,
            stdout: LineSplitter::new(Stream::Stdout),
            stderr: LineSplitter::new(Stream::Stderr),
            tail: Tail::new(tail),
        }
    }

    pub(crate) fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let sink = &mut self.sink;
        match stream {
            Stream::Stdout => {
                self.tail.push(bytes);
                self.stdout.push(bytes, &mut |line| sink.send(line));
            }
            Stream::Stderr => self.stderr.push(bytes, &mut |line| sink.send(line)),
        }
    }

    /// Emits unterminated last lines; returns the stdout tail.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        let sink = &mut self.sink;
        self.stdout.finish(&mut |line| sink.send(line));
        self.stderr.finish(&mut |line| sink.send(line));
        sink.finish();
        self.tail.into_bytes()
    }
}
