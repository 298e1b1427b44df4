//! Request and response bodies, by resource; their schemas go into the OpenAPI document.

mod conversations;
mod gates;
mod login_links;
mod people;
mod projects;
mod reports;
mod requirements;
mod runs;
mod schedules;
mod tokens;
mod usage;

pub use conversations::*;
pub use gates::*;
pub use login_links::*;
pub use people::*;
pub use projects::*;
pub use reports::*;
pub use requirements::*;
pub use runs::*;
pub use schedules::*;
pub use tokens::*;
pub use usage::*;

pub use crate::rights::Scope;
