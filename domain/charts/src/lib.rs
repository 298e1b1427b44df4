//! Report charts as SVG strings, drawn on the server.
//!
//! The console is server-rendered HTML without JavaScript, so its Reports page cannot
//! chart in the browser: it aggregates figures (cost, tokens, runs, durations per
//! project, person, SOP version or model over time) and hands them here. This crate
//! does no I/O; it validates the figures and returns a self-contained, accessible
//! `<svg>` whose user-supplied names are escaped, ready to inline in a page.

mod axis;
mod describe;
mod error;
mod group;
mod legend;
mod model;
mod palette;
mod render;
mod text;
mod ticks;
mod units;
mod validate;

pub use error::ChartError;
pub use group::{MAX_SERIES, OTHER, top_series};
pub use model::{Series, Style, TimeChart, Unit};
pub use render::{svg, svg_uncaptioned};
pub use validate::{MAX_SIDE, MAX_VALUE, MIN_HEIGHT, MIN_WIDTH};
