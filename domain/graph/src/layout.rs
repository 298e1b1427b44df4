//! Where everything goes, in pixels: layers left to right, nodes as boxes of one size,
//! edges as paths through the gaps between layers.

use std::collections::BTreeMap;

use crate::layers::{Chain, Skeleton, skeleton};
use crate::lines::node_height;
use crate::model::{EdgeKind, Graph};
use crate::place::place;

pub(crate) const NODE_W: i32 = 180;
/// Between layers: room for the edges' curves.
pub(crate) const GAP_X: i32 = 48;
/// Between two nodes of a layer.
pub(crate) const NODE_GAP: i32 = 20;
/// Between an edge passing through a layer and what is next to it.
pub(crate) const EDGE_GAP: i32 = 10;
/// The slot an edge passing through a layer takes.
pub(crate) const DUMMY_H: i32 = 4;
pub(crate) const MARGIN: i32 = 16;
/// Between the ends of edges on one side of a node.
const PORT_GAP: i32 = 10;
/// Edge ends keep this far from a node's corners.
const PORT_INSET: i32 = 12;

/// A graph's drawing, in pixels from the top-left corner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub width: i32,
    pub height: i32,
    /// One per node, in the graph's order.
    pub nodes: Vec<NodeBox>,
    /// One per edge that can be drawn, in the graph's order: edges naming an unknown
    /// node, from a node to itself, or repeating an earlier one are left out.
    pub edges: Vec<EdgePath>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeBox {
    /// Counted from 0 at the left: every `needs` edge goes to a later layer.
    pub layer: usize,
    pub rect: Rect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

/// An edge's route from its `from` node's side to its `to` node's side. Consecutive
/// points are joined by a straight line when level or plumb, else by an S-curve leaving
/// and arriving horizontally; either stays within the rectangle the two points span,
/// which is clear of every node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdgePath {
    /// Index into the graph's edges.
    pub edge: usize,
    /// Indices into the graph's nodes.
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    pub points: Vec<Point>,
}

impl Rect {
    pub fn right(&self) -> i32 {
        self.x + self.width
    }

    pub fn bottom(&self) -> i32 {
        self.y + self.height
    }
}

/// Lays `graph` out. Pure and deterministic: the same graph gives the same layout.
pub fn layout(graph: &Graph) -> Layout {
    let s = skeleton(graph);
    let node_h = node_height(graph, NODE_W);
    let y = place(&s, node_h);
    let half = |item: usize| {
        f64::from(if s.items[item].node.is_some() {
            node_h
        } else {
            DUMMY_H
        }) / 2.0
    };
    let top = (0..y.len())
        .map(|i| y[i] - half(i))
        .fold(f64::INFINITY, f64::min);
    let shift = f64::from(MARGIN) - if top.is_finite() { top } else { 0.0 };
    // Whole pixels: every gap is wider than the rounding can take away.
    let centre: Vec<i32> = y.iter().map(|v| (v + shift).round() as i32).collect();
    let nodes: Vec<NodeBox> = (0..graph.nodes.len())
        .map(|n| NodeBox {
            layer: s.layer_of[n],
            rect: Rect {
                x: column(s.layer_of[n]),
                y: centre[n] - node_h / 2,
                width: NODE_W,
                height: node_h,
            },
        })
        .collect();
    let ports = ports(&s, &centre, node_h);
    let edges: Vec<EdgePath> = (s.chains.iter().zip(ports))
        .map(|(chain, ends)| route(&s, chain, ends, &centre))
        .collect();
    let right = (nodes.iter().map(|n| n.rect.right()))
        .chain(edges.iter().flat_map(|e| e.points.iter().map(|p| p.x)));
    let bottom = (0..centre.len()).map(|i| centre[i] + half(i).ceil() as i32);
    Layout {
        width: right.max().unwrap_or(MARGIN) + MARGIN,
        height: bottom.max().unwrap_or(MARGIN) + MARGIN,
        nodes,
        edges,
    }
}

fn column(layer: usize) -> i32 {
    let layer = i32::try_from(layer).unwrap_or(i32::MAX);
    layer.saturating_mul(NODE_W + GAP_X).saturating_add(MARGIN)
}

/// The lower-layer end (or `from`, within a layer) and the other.
fn ends(s: &Skeleton, chain: &Chain) -> (usize, usize) {
    if s.layer_of[chain.from] <= s.layer_of[chain.to] {
        (chain.from, chain.to)
    } else {
        (chain.to, chain.from)
    }
}

/// One edge's end on one side of a node.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct End {
    /// The y of the next item along the edge: ends are spread in this order.
    toward: i32,
    kind: EdgeKind,
    chain: usize,
    /// Whether this is the chain's lower-layer end.
    lo: bool,
}

/// Per chain, the y where it meets its lower-layer end and its other end. The ends on one
/// side of a node spread out, in the order of where they come from, so they do not cross.
fn ports(s: &Skeleton, centre: &[i32], node_h: i32) -> Vec<(i32, i32)> {
    // (node, its right side?) -> the ends there
    let mut sides: BTreeMap<(usize, bool), Vec<End>> = BTreeMap::new();
    for (c, chain) in s.chains.iter().enumerate() {
        let (lo, hi) = ends(s, chain);
        let same_layer = s.layer_of[lo] == s.layer_of[hi];
        let after_lo = chain.dummies.first().copied().unwrap_or(hi);
        let before_hi = chain.dummies.last().copied().unwrap_or(lo);
        let end = |toward: usize, lo: bool| End {
            toward: centre[toward],
            kind: chain.kind,
            chain: c,
            lo,
        };
        sides
            .entry((lo, true))
            .or_default()
            .push(end(after_lo, true));
        sides
            .entry((hi, same_layer))
            .or_default()
            .push(end(before_hi, false));
    }
    let mut out = vec![(0, 0); s.chains.len()];
    for ((node, _), mut list) in sides {
        list.sort();
        let n = i32::try_from(list.len()).unwrap_or(i32::MAX);
        let spacing = if n > 1 {
            PORT_GAP.min((node_h - 2 * PORT_INSET) / (n - 1))
        } else {
            0
        };
        for (k, end) in (0..).zip(&list) {
            let y = centre[node] + (2 * k - (n - 1)) * spacing / 2;
            if end.lo {
                out[end.chain].0 = y;
            } else {
                out[end.chain].1 = y;
            }
        }
    }
    out
}

fn route(s: &Skeleton, chain: &Chain, (lo_y, hi_y): (i32, i32), centre: &[i32]) -> EdgePath {
    let (lo, hi) = ends(s, chain);
    let lo_right = column(s.layer_of[lo]) + NODE_W;
    let mut points = vec![Point {
        x: lo_right,
        y: lo_y,
    }];
    if s.layer_of[lo] == s.layer_of[hi] {
        // A bracket out of one node's right side and into the other's, in the gap.
        let x = lo_right + GAP_X / 2;
        points.extend([
            Point { x, y: lo_y },
            Point { x, y: hi_y },
            Point {
                x: lo_right,
                y: hi_y,
            },
        ]);
    } else {
        for &d in &chain.dummies {
            let x = column(s.items[d].layer);
            points.push(Point { x, y: centre[d] });
            points.push(Point {
                x: x + NODE_W,
                y: centre[d],
            });
        }
        points.push(Point {
            x: column(s.layer_of[hi]),
            y: hi_y,
        });
    }
    if lo != chain.from {
        points.reverse();
    }
    EdgePath {
        edge: chain.edge,
        from: chain.from,
        to: chain.to,
        kind: chain.kind,
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Edge, Kind, Node};
    use EdgeKind::{Needs, SendBack};

    fn show(graph: &Graph, layout: &Layout) -> String {
        let mut out = format!("{} x {}\n", layout.width, layout.height);
        for (node, b) in graph.nodes.iter().zip(&layout.nodes) {
            let r = b.rect;
            out += &format!("{:<7} layer {} at {},{}\n", node.id, b.layer, r.x, r.y);
        }
        for e in &layout.edges {
            let points: Vec<String> = e
                .points
                .iter()
                .map(|p| format!("{},{}", p.x, p.y))
                .collect();
            let (from, to) = (&graph.nodes[e.from].id, &graph.nodes[e.to].id);
            out += &format!("{from} -{:?}-> {to}: {}\n", e.kind, points.join(" "));
        }
        out
    }

    #[test]
    fn a_small_graph_lays_out_left_to_right() {
        let mut g = Graph::new("t");
        for (id, kind) in [
            ("fetch", Kind::Script),
            ("build", Kind::Agent),
            ("docs", Kind::Agent),
        ] {
            g.nodes.push(Node::new(id, id, kind));
        }
        g.nodes.push(Node::new("review", "Review", Kind::Gate));
        g.nodes.push(Node::new("ship", "Ship", Kind::Deliver));
        for (a, b, kind) in [
            ("fetch", "build", Needs),
            ("fetch", "docs", Needs),
            ("build", "review", Needs),
            ("docs", "review", Needs),
            ("review", "ship", Needs),
            ("fetch", "ship", Needs),
            ("review", "build", SendBack),
            ("ship", "nowhere", Needs),
        ] {
            g.edges.push(Edge::new(a, b, kind));
        }
        insta::assert_snapshot!(show(&g, &layout(&g)), @"
        896 x 210
        fetch   layer 0 at 16,93
        build   layer 1 at 244,16
        docs    layer 1 at 244,108
        review  layer 2 at 472,77
        ship    layer 3 at 700,101
        fetch -Needs-> build: 196,119 244,52
        fetch -Needs-> docs: 196,129 244,144
        build -Needs-> review: 424,47 472,103
        docs -Needs-> review: 424,144 472,123
        review -Needs-> ship: 652,113 700,132
        fetch -Needs-> ship: 196,139 244,192 424,192 472,161 652,161 700,142
        review -SendBack-> build: 472,113 424,57
        ");
    }

    #[test]
    fn an_empty_graph_is_just_its_margins() {
        let l = layout(&Graph::new("empty"));
        assert_eq!(
            (l.width, l.height, l.nodes.len()),
            (2 * MARGIN, 2 * MARGIN, 0)
        );
    }
}
