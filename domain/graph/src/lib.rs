//! An SOP's graph as a picture.
//!
//! The web console, the HTTP API (`/api/v1/runs/{id}/graph.svg`) and the CLI
//! (`gatehouse run show --svg`) all show an SOP, or one run of it, as the same drawing;
//! this crate is that drawing, so that they agree and none of them needs JavaScript or a
//! graph tool to get it. It is pure: a [`Graph`] in, a [`Layout`] or an SVG string out.
//!
//! - [`Graph::of_sop`] takes the nodes and edges from a validated SOP: `needs` edges, and
//!   send-back edges from a gate's `send_back` list, a node's `on_failure.send_back` and a
//!   deliver node's rules for feedback on its pull request.
//!   [`Graph::set_state`] adds a run's state per node.
//! - [`layout`] places it, Sugiyama-style, left to right in the order work flows: layers
//!   by longest path over `needs` (send-back edges point backwards, so they do not count),
//!   a few barycenter sweeps to cross fewer edges, boxes of one size per graph (tall
//!   enough for the longest title, wrapped over up to three lines, and a gate's decisions). Edges spanning
//!   several layers get a slot in each layer they pass, so no edge runs through a box.
//!   The same graph always gives the same layout.
//! - [`svg`] draws it: a standalone document, also fit to be put inline in an HTML page.
//!   Each node's status is written out, not only coloured; the whole graph is described
//!   in words in its `<desc>`. Every piece of text from the SOP file is escaped, links are
//!   limited to harmless ones, and there are no scripts or external resources.
//!
//! To put the SVG in a page, insert the string as markup (it is a trusted fragment; do not
//! escape it again). It is `role="img"`, named by its `<title>` and described by its
//! `<desc>`, so assistive technology reads those and not the boxes or their links; keep
//! the per-node sections those links point at (`#node-<id>`). Its size is in pixels;
//! `.gh-graph { max-width: 100%; height: auto }` lets it shrink with the page. Give each
//! picture on one page its own [`SvgOptions::id_prefix`].

mod describe;
mod layers;
mod layout;
mod lines;
mod model;
mod order;
mod place;
mod style;
mod svg;
mod text;

pub use layout::{EdgePath, Layout, NodeBox, Point, Rect, layout};
pub use model::{Edge, EdgeKind, Graph, Kind, Node, NodeState};
pub use svg::{SvgOptions, svg, svg_with};

pub use gatehouse_events::NodeStatus;
