//! The lines of text in a node's box: its title (wrapped), its kind and id, its state and
//! counts in a run, and a gate's decisions. The layout sizes every box to hold the most
//! lines any box of the graph has, so the boxes stay one height and the layout stays a
//! grid; the SVG writes the lines.

use crate::describe::{meta, state_lines};
use crate::model::{Graph, Node};
use crate::text::{fit, wrap};

/// Between a box's border and its text.
pub(crate) const PADDING: i32 = 10;
/// A title's size in pixels, widened a little for its bold face when fitting it.
pub(crate) const TITLE_PX: f64 = 13.0 * 1.08;
pub(crate) const LINE_PX: f64 = 11.0;
pub(crate) const LINE_HEIGHT: i32 = 15;
/// The most lines a title wraps over; the last is cut with an ellipsis past that.
pub(crate) const TITLE_LINES: usize = 3;
/// The most decisions a box lists; more are counted on the last line.
pub(crate) const DECISION_LINES: usize = 3;
/// The height of a box that holds four lines, the most a node had before titles wrapped.
pub(crate) const MIN_NODE_H: i32 = 72;
/// Above the first line and below the last.
const V_PADDING: i32 = 6;

/// One line of a box: its class (`gh-node-<class>`), text, font size and weight.
pub(crate) struct Line {
    pub(crate) class: &'static str,
    pub(crate) text: String,
    pub(crate) size: &'static str,
    pub(crate) weight: &'static str,
}

/// The lines of `node`'s box, `width` pixels wide, top to bottom.
pub(crate) fn box_lines(node: &Node, width: i32) -> Vec<Line> {
    let room = f64::from(width - 2 * PADDING);
    let line = |class, text, size, weight| Line {
        class,
        text,
        size,
        weight,
    };
    let mut lines: Vec<Line> = wrap(&node.title, room, TITLE_PX, TITLE_LINES)
        .into_iter()
        .map(|t| line("title", t, "13", "600"))
        .collect();
    lines.push(line("meta", fit(&meta(node), room, LINE_PX), "11", "400"));
    let (status, counts) = state_lines(node);
    if let Some(s) = status {
        lines.push(line("status", s, "11", "600"));
    }
    if let Some(c) = counts {
        lines.push(line("counts", fit(&c, room, LINE_PX), "11", "400"));
    }
    let shown = if node.decisions.len() > DECISION_LINES {
        DECISION_LINES - 1
    } else {
        node.decisions.len()
    };
    for d in &node.decisions[..shown] {
        lines.push(line("decision", fit(d, room, LINE_PX), "11", "400"));
    }
    if shown < node.decisions.len() {
        let more = format!("and {} more decisions", node.decisions.len() - shown);
        lines.push(line("decision", fit(&more, room, LINE_PX), "11", "400"));
    }
    lines
}

/// The height of every box of `graph`, `width` pixels wide: room for the most lines any
/// of them has, and never less than [`MIN_NODE_H`].
pub(crate) fn node_height(graph: &Graph, width: i32) -> i32 {
    let most = graph
        .nodes
        .iter()
        .map(|n| box_lines(n, width).len())
        .max()
        .unwrap_or(0);
    let most = i32::try_from(most).unwrap_or(i32::MAX / LINE_HEIGHT);
    (most * LINE_HEIGHT + 2 * V_PADDING).max(MIN_NODE_H)
}
