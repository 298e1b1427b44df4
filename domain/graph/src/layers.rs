//! The first Sugiyama step: layers by longest path over `needs`.
//!
//! An edge spanning several layers gets a placeholder item in each layer between its
//! ends, so that it has a slot of its own there and never runs through a node. Send-back
//! edges get placeholders too (they run backwards over the same layers) but do not
//! decide the layers.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{EdgeKind, Graph};
use crate::order::order;

/// The graph as layers of ordered items, before coordinates.
#[derive(Debug)]
pub(crate) struct Skeleton {
    /// Per node, its layer.
    pub layer_of: Vec<usize>,
    pub items: Vec<Item>,
    /// Per layer, its item ids top to bottom.
    pub layers: Vec<Vec<usize>>,
    /// Per item, the items it is joined to in the layer before and the layer after, each
    /// with the kind of the edge joining them.
    pub left: Vec<Vec<(usize, EdgeKind)>>,
    pub right: Vec<Vec<(usize, EdgeKind)>>,
    pub chains: Vec<Chain>,
}

/// A node, or a placeholder for an edge passing through a layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Item {
    pub layer: usize,
    /// `None` for a placeholder.
    pub node: Option<usize>,
    /// The kind of edge a placeholder stands for.
    pub kind: EdgeKind,
}

/// One drawable edge: its ends (node indices) and its placeholders from the lower layer
/// to the higher one. Same-layer edges (only a hand-built send-back can be one) have none.
#[derive(Debug)]
pub(crate) struct Chain {
    pub edge: usize,
    pub from: usize,
    pub to: usize,
    pub kind: EdgeKind,
    pub dummies: Vec<usize>,
}

pub(crate) fn skeleton(graph: &Graph) -> Skeleton {
    let mut index = BTreeMap::new();
    for (i, node) in graph.nodes.iter().enumerate() {
        index.entry(node.id.as_str()).or_insert(i);
    }
    // Unknown ends and self-loops cannot be drawn; repeats are drawn once.
    let mut seen = BTreeSet::new();
    let edges: Vec<(usize, usize, usize, EdgeKind)> = (graph.edges.iter().enumerate())
        .filter_map(|(e, edge)| {
            let (from, to) = (
                *index.get(edge.from.as_str())?,
                *index.get(edge.to.as_str())?,
            );
            (from != to && seen.insert((from, to, edge.kind))).then_some((e, from, to, edge.kind))
        })
        .collect();
    let layer_of = layers(graph.nodes.len(), &edges);
    let mut s = Skeleton {
        items: (0..graph.nodes.len())
            .map(|n| Item {
                layer: layer_of[n],
                node: Some(n),
                kind: EdgeKind::Needs,
            })
            .collect(),
        layers: vec![Vec::new(); layer_of.iter().max().map_or(0, |m| m + 1)],
        left: Vec::new(),
        right: Vec::new(),
        chains: Vec::new(),
        layer_of,
    };
    for (n, &l) in s.layer_of.iter().enumerate() {
        s.layers[l].push(n);
    }
    let mut links = Vec::new();
    for (edge, from, to, kind) in edges {
        let (lo, hi) = if s.layer_of[from] <= s.layer_of[to] {
            (from, to)
        } else {
            (to, from)
        };
        let mut chain = Chain {
            edge,
            from,
            to,
            kind,
            dummies: Vec::new(),
        };
        if s.layer_of[lo] < s.layer_of[hi] {
            let mut prev = lo;
            for layer in s.layer_of[lo] + 1..s.layer_of[hi] {
                let id = s.items.len();
                s.items.push(Item {
                    layer,
                    node: None,
                    kind,
                });
                s.layers[layer].push(id);
                chain.dummies.push(id);
                links.push((prev, id, kind));
                prev = id;
            }
            links.push((prev, hi, kind));
        }
        s.chains.push(chain);
    }
    s.left = vec![Vec::new(); s.items.len()];
    s.right = vec![Vec::new(); s.items.len()];
    for (a, b, kind) in links {
        s.right[a].push((b, kind));
        s.left[b].push((a, kind));
    }
    order(&mut s);
    s
}

/// Longest path from the sources over `needs`, ignoring the edges that close a cycle; then
/// each source moves up to just before the first node that needs it, so that a node
/// needed late is drawn near where it is needed.
fn layers(count: usize, edges: &[(usize, usize, usize, EdgeKind)]) -> Vec<usize> {
    let mut out = vec![Vec::new(); count];
    for &(_, from, to, kind) in edges {
        if kind == EdgeKind::Needs {
            out[from].push(to);
        }
    }
    // Iterative DFS in node order; an edge to a node still on the stack closes a cycle.
    let mut state = vec![0u8; count]; // 0 new, 1 on the stack, 2 done
    let mut kept = vec![Vec::new(); count];
    for start in 0..count {
        if state[start] != 0 {
            continue;
        }
        state[start] = 1;
        let mut stack = vec![(start, 0)];
        while let Some((node, next)) = stack.pop() {
            if let Some(&to) = out[node].get(next) {
                stack.push((node, next + 1));
                if state[to] != 1 {
                    kept[node].push(to);
                }
                if state[to] == 0 {
                    state[to] = 1;
                    stack.push((to, 0));
                }
            } else {
                state[node] = 2;
            }
        }
    }
    let mut incoming = vec![0usize; count];
    for &to in kept.iter().flatten() {
        incoming[to] += 1;
    }
    let mut ready: BTreeSet<usize> = (0..count).filter(|&n| incoming[n] == 0).collect();
    let mut layer = vec![0; count];
    let mut topo = Vec::with_capacity(count);
    while let Some(node) = ready.pop_first() {
        topo.push(node);
        for &to in &kept[node] {
            layer[to] = layer[to].max(layer[node] + 1);
            incoming[to] -= 1;
            if incoming[to] == 0 {
                ready.insert(to);
            }
        }
    }
    let needing: BTreeSet<usize> = kept.iter().flatten().copied().collect();
    for node in (0..count).filter(|n| !needing.contains(n)) {
        if let Some(first) = kept[node].iter().map(|&to| layer[to]).min() {
            layer[node] = first - 1;
        }
    }
    layer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Edge, Kind, Node};

    fn graph(nodes: &[&str], edges: &[(&str, &str, EdgeKind)]) -> Graph {
        let mut g = Graph::new("t");
        g.nodes = (nodes.iter())
            .map(|id| Node::new(*id, *id, Kind::Script))
            .collect();
        g.edges = (edges.iter())
            .map(|(a, b, k)| Edge::new(*a, *b, *k))
            .collect();
        g
    }

    use EdgeKind::{Needs, SendBack};

    #[test]
    fn layers_follow_the_longest_path_and_sources_move_up_to_their_use() {
        let g = graph(
            &["a", "b", "c", "late"],
            &[
                ("a", "b", Needs),
                ("b", "c", Needs),
                ("a", "c", Needs),
                ("late", "c", Needs),
            ],
        );
        assert_eq!(skeleton(&g).layer_of, [0, 1, 2, 1]);
    }

    #[test]
    fn send_back_edges_do_not_make_layers_and_cycles_do_not_hang() {
        let g = graph(&["a", "b"], &[("a", "b", Needs), ("b", "a", SendBack)]);
        assert_eq!(skeleton(&g).layer_of, [0, 1]);
        let g = graph(
            &["a", "b", "c"],
            &[("a", "b", Needs), ("b", "c", Needs), ("c", "a", Needs)],
        );
        assert_eq!(skeleton(&g).layer_of, [0, 1, 2]);
    }

    #[test]
    fn long_edges_get_a_placeholder_per_layer_passed() {
        let g = graph(
            &["a", "b", "c", "d"],
            &[
                ("a", "b", Needs),
                ("b", "c", Needs),
                ("c", "d", Needs),
                ("a", "d", Needs),
                ("d", "a", SendBack),
            ],
        );
        let s = skeleton(&g);
        let dummies: Vec<usize> = s.chains.iter().map(|c| c.dummies.len()).collect();
        assert_eq!(dummies, [0, 0, 0, 2, 2]);
        assert_eq!(
            s.layers.iter().map(Vec::len).collect::<Vec<_>>(),
            [1, 3, 3, 1]
        );
    }
}
