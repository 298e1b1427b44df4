//! A `command` executor's stdout: the reply, and the `gatehouse_usage` line.
//!
//! A user's own program calls no tools Gatehouse can see. Its stdout is its reply, except
//! for the `{"gatehouse_usage": …}` line a wrapper prints to have its tokens counted (see
//! `report.rs` beside this file), which [`crate::parse_report`] reads: the last one wins and a
//! malformed one is the attempt's failure, as in a report. Read line by line, that object
//! must be on one line, as documented. The reply keeps the output's last 64 KiB, where a
//! program's conclusion is.

use crate::executor::Executor;
use crate::parse_report;
use crate::trace::Ending;
use crate::usage::{ParseError, Report};

/// The key that marks the usage line.
const KEY: &str = "gatehouse_usage";

/// How much of the reply is kept, in bytes.
const MAX_REPLY_BYTES: usize = 64 * 1024;

/// A `command`'s output so far.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    usage: Option<Result<Report, ParseError>>,
    reply: String,
    /// The reply's start was dropped.
    cut: bool,
}

impl crate::trace::Events for Reader {
    fn line(
        &mut self,
        line: &str,
        _at_ms: u64,
        _shared: &mut crate::trace::Shared,
        model: Option<&str>,
    ) -> bool {
        if is_usage(line) {
            self.usage = Some(parse_report(Executor::Command, model, line.as_bytes()));
            return true;
        }
        self.reply.push_str(line);
        self.reply.push('\n');
        // Cut only once there is a whole extra reply's worth, so cutting stays rare.
        if self.reply.len() > 2 * MAX_REPLY_BYTES {
            self.keep_tail();
        }
        true
    }

    fn finish(
        mut self: Box<Self>,
        _model: Option<&str>,
        _no_result: &dyn Fn() -> String,
    ) -> Ending {
        self.keep_tail();
        let text = self.reply.trim();
        let reply = match (text.is_empty(), self.cut) {
            (true, _) => None,
            (false, false) => Some(text.to_owned()),
            (false, true) => Some(format!("…{text}")),
        };
        let (report, failure) = match self.usage {
            Some(Ok(report)) => (report, None),
            Some(Err(error)) => (Report::default(), Some(error.to_string())),
            None => (Report::default(), None),
        };
        Ending {
            reply,
            report,
            failure,
        }
    }
}

impl Reader {
    fn keep_tail(&mut self) {
        if self.reply.len() <= MAX_REPLY_BYTES {
            return;
        }
        let mut start = self.reply.len() - MAX_REPLY_BYTES;
        while !self.reply.is_char_boundary(start) {
            start += 1;
        }
        self.reply.drain(..start);
        self.cut = true;
    }
}

/// A line holding the usage object. Anything else, JSON included, is part of the reply.
fn is_usage(line: &str) -> bool {
    let line = line.trim();
    line.starts_with('{')
        && line.contains(KEY)
        && serde_json::from_str::<crate::trace::Object>(line)
            .is_ok_and(|object| object.contains_key(KEY))
}

#[cfg(test)]
mod tests {
    use super::{MAX_REPLY_BYTES, Reader};
    use crate::trace::Events;

    #[test]
    fn a_long_reply_keeps_its_end_and_says_it_was_cut() {
        let mut reader = Box::new(Reader::default());
        for i in 0..20_000 {
            reader.line(
                &format!("line {i} é"),
                0,
                &mut crate::trace::Shared::default(),
                None,
            );
        }
        let reply = reader.finish(None, &String::new).reply.unwrap_or_default();
        assert!(reply.starts_with('…'));
        assert!(reply.ends_with("line 19999 é"));
        assert!(reply.len() <= MAX_REPLY_BYTES + '…'.len_utf8());
    }
}
