//! What a page request came to when it did not render. Pages and the session both answer
//! with it; how it is shown (a sign-in redirect, an error page in the console's frame) is
//! [`super::page`]'s business.

use gatehouse_store::StoreError;

use crate::ApiError;

/// What a page request came to when it did not render.
#[derive(Debug)]
pub(crate) enum PageError {
    /// Nobody is signed in: sign in, then come back to `next`.
    SignIn { next: String, cross_site: bool },
    /// The API's refusal or failure, shown as a page with its status.
    Api(ApiError),
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError::Api(e)
    }
}

impl From<StoreError> for PageError {
    fn from(e: StoreError) -> Self {
        PageError::Api(e.into())
    }
}
