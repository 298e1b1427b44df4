//! The second Sugiyama step: an order within each layer that crosses fewer edges.

use std::collections::BTreeMap;

use crate::layers::Skeleton;

const SWEEPS: usize = 8;

/// Barycenter sweeps down and up the layers, keeping the order with the fewest
/// crossings seen. Stable sorts keep ties in their current order, so it is deterministic.
pub(crate) fn order(s: &mut Skeleton) {
    let mut best = (crossings(s), s.layers.clone());
    for _ in 0..SWEEPS {
        if best.0 == 0 {
            break;
        }
        for l in 1..s.layers.len() {
            sort_layer(s, l, true);
        }
        for l in (0..s.layers.len().saturating_sub(1)).rev() {
            sort_layer(s, l, false);
        }
        let now = crossings(s);
        if now < best.0 {
            best = (now, s.layers.clone());
        }
    }
    s.layers = best.1;
}

fn sort_layer(s: &mut Skeleton, l: usize, from_left: bool) {
    let (side, other) = if from_left {
        (&s.left, l.wrapping_sub(1))
    } else {
        (&s.right, l + 1)
    };
    let pos = positions(&s.layers, other);
    let mut keyed: Vec<(f64, usize)> = (s.layers[l].iter().enumerate())
        .map(|(i, &item)| {
            let ps: Vec<f64> = side[item]
                .iter()
                .filter_map(|(n, _)| pos.get(n).copied())
                .collect();
            let key = if ps.is_empty() {
                i as f64
            } else {
                ps.iter().sum::<f64>() / ps.len() as f64
            };
            (key, item)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    s.layers[l] = keyed.into_iter().map(|(_, item)| item).collect();
}

/// Item id to its index in layer `l` (empty when there is no such layer).
fn positions(layers: &[Vec<usize>], l: usize) -> BTreeMap<usize, f64> {
    (layers.get(l).into_iter().flatten().enumerate())
        .map(|(i, &item)| (item, i as f64))
        .collect()
}

pub(crate) fn crossings(s: &Skeleton) -> usize {
    let mut total = 0;
    for l in 0..s.layers.len().saturating_sub(1) {
        let (a, b) = (positions(&s.layers, l), positions(&s.layers, l + 1));
        let mut links = Vec::new();
        for (&item, &pa) in &a {
            for (next, _) in &s.right[item] {
                if let Some(&pb) = b.get(next) {
                    links.push((pa, pb));
                }
            }
        }
        for (i, x) in links.iter().enumerate() {
            total += (links[i + 1..].iter())
                .filter(|y| (x.0 - y.0) * (x.1 - y.1) < 0.0)
                .count();
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use crate::layers::skeleton;
    use crate::model::{Edge, EdgeKind, Graph, Kind, Node};

    use super::crossings;

    #[test]
    fn sweeps_undo_a_crossing_the_file_order_makes() {
        let mut g = Graph::new("t");
        for id in ["a", "b", "c", "d"] {
            g.nodes.push(Node::new(id, id, Kind::Script));
        }
        g.edges.push(Edge::new("a", "d", EdgeKind::Needs));
        g.edges.push(Edge::new("b", "c", EdgeKind::Needs));
        let s = skeleton(&g);
        assert_eq!(crossings(&s), 0);
        assert_eq!(s.layers, [vec![0, 1], vec![3, 2]]);
    }
}
