//! Reading Slack's JSON: by the `type` field first, then into the shape that type has, with
//! errors that name what was being read.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::PayloadError;

/// `value` as `T`, or an error naming `what` it was meant to be.
pub(crate) fn read<T: DeserializeOwned>(
    value: serde_json::Value,
    what: &'static str,
) -> Result<T, PayloadError> {
    serde_json::from_value(value).map_err(|source| PayloadError::Invalid { what, source })
}

/// Just the `type` of a payload, to choose its shape.
#[derive(Deserialize)]
pub(crate) struct Typed {
    /// Slack's `type` field.
    #[serde(rename = "type")]
    pub kind: String,
}
