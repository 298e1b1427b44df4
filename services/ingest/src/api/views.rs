//! Request and response bodies, by resource; their schemas go into the OpenAPI document.
//! Each resource keeps its own next to its handlers; they are gathered here for the
//! OpenAPI document and for clients (`gatehouse_ingest::views`).

pub use super::connections::ConnectionView;
pub use super::conversations::views::*;
pub use super::deliveries::views::*;
pub use super::gates::views::*;
pub use super::login_links::views::*;
pub use super::people::views::*;
pub use super::projects::views::*;
pub use super::questions::views::*;
pub use super::reports::views::*;
pub use super::requirements::views::*;
pub use super::runs::budgets::BudgetView;
pub use super::runs::usage::*;
pub use super::runs::views::*;
pub use super::schedules::views::*;
pub use super::sops::views::*;
pub use super::tokens::views::*;

pub use crate::rights::Scope;
