//! The provider's answer on its way back to the CLI: each frame is passed on as it arrives
//! and read by the meter on the way; when the answer ends — whole, cut by the provider, or
//! dropped by the client — its usage is recorded once.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::budget::Hold;
use crate::grants::Granted;
use crate::meter::Meter;
use crate::refusal::BoxError;
use crate::usage::Metered;

/// Where a finished answer's usage goes.
pub(crate) struct Account {
    pub(crate) granted: Arc<Granted>,
    pub(crate) status: u16,
    pub(crate) meter: Meter,
    /// The request's budget ticket, if its grant has a budget.
    pub(crate) hold: Option<Hold>,
}

impl Account {
    /// Adds the usage to the grant's totals, charges its budget and tells its sink.
    pub(crate) fn close(self, complete: bool) {
        let usage = self.meter.finish();
        let granted = self.granted;
        granted.totals().add(&usage);
        if let Some(hold) = self.hold {
            hold.charge(&usage);
        }
        tracing::info!(
            grant = %granted.label,
            provider = %granted.provider,
            status = self.status,
            model = usage.model.as_deref().unwrap_or(""),
            input = usage.input,
            output = usage.output,
            cache_read = usage.cache_read,
            cache_write = usage.cache_write,
            complete,
            "model request metered"
        );
        if let Some(sink) = &granted.sink {
            sink.record(&Metered {
                label: granted.label.clone(),
                provider: granted.provider.clone(),
                status: self.status,
                usage,
                complete,
            });
        }
    }
}

/// A provider's body, metered as it streams.
pub(crate) struct MeteredBody<B> {
    inner: B,
    account: Option<Account>,
}

impl<B> MeteredBody<B> {
    pub(crate) fn new(inner: B, account: Account) -> Self {
        Self {
            inner,
            account: Some(account),
        }
    }

    fn close(&mut self, complete: bool) {
        if let Some(account) = self.account.take() {
            account.close(complete);
        }
    }
}

impl<B> Body for MeteredBody<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if let (Some(data), Some(account)) = (frame.data_ref(), this.account.as_mut()) {
                    account.meter.feed(data);
                }
                // A body of known length ends with its last byte: hyper stops polling then.
                if this.inner.is_end_stream() {
                    this.close(true);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(error)) => {
                this.close(false);
                Poll::Ready(Some(Err(error.into())))
            }
            None => {
                this.close(true);
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> Drop for MeteredBody<B> {
    fn drop(&mut self) {
        self.close(false);
    }
}
