//! The third Sugiyama step: where each item sits within its layer. Each one goes as near
//! as it can to the items it is joined to, keeping the order and the spacing; a chain of
//! nodes comes out straight, and a node between several sits in their middle.
//!
//! Each layer in turn is a weighted least-squares problem under ordering constraints,
//! solved exactly by pool-adjacent-violators. Send-back placeholders weigh little, so a
//! send-back edge moves out of the nodes' way rather than the nodes out of its way.

use crate::layers::Skeleton;
use crate::layout::{DUMMY_H, EDGE_GAP, NODE_GAP};
use crate::model::EdgeKind;

const PASSES: usize = 6;
/// The pull of an item whose neighbours on the side in hand do not count.
const NO_OPINION: f64 = 0.05;
/// The pull of a send-back placeholder.
const SEND_BACK: f64 = 0.02;

/// Per item, the y of its centre (any origin: the caller shifts them).
/// `node_h` is the height of every node's box.
pub(crate) fn place(s: &Skeleton, node_h: i32) -> Vec<f64> {
    let mut y = vec![0.0; s.items.len()];
    for l in 0..s.layers.len() {
        let offsets = offsets(s, l, node_h);
        let middle = offsets.last().copied().unwrap_or(0.0) / 2.0;
        for (&item, o) in s.layers[l].iter().zip(offsets) {
            y[item] = o - middle;
        }
    }
    for _ in 0..PASSES {
        for l in 0..s.layers.len() {
            align(s, &mut y, l, &s.left, node_h);
        }
        for l in (0..s.layers.len()).rev() {
            align(s, &mut y, l, &s.right, node_h);
        }
    }
    y
}

fn height(s: &Skeleton, item: usize, node_h: i32) -> f64 {
    if s.items[item].node.is_some() {
        f64::from(node_h)
    } else {
        f64::from(DUMMY_H)
    }
}

/// Per item of layer `l`, the least distance from the first item's centre to its centre.
fn offsets(s: &Skeleton, l: usize, node_h: i32) -> Vec<f64> {
    let layer = &s.layers[l];
    let mut out = Vec::with_capacity(layer.len());
    let mut at = 0.0;
    for (i, &item) in layer.iter().enumerate() {
        if i > 0 {
            let prev = layer[i - 1];
            let both_nodes = s.items[prev].node.is_some() && s.items[item].node.is_some();
            let gap = if both_nodes { NODE_GAP } else { EDGE_GAP };
            at += (height(s, prev, node_h) + height(s, item, node_h)) / 2.0 + f64::from(gap);
        }
        out.push(at);
    }
    out
}

/// Moves layer `l`'s items towards the mean of their neighbours on one side.
fn align(s: &Skeleton, y: &mut [f64], l: usize, side: &[Vec<(usize, EdgeKind)>], node_h: i32) {
    let layer = &s.layers[l];
    let offsets = offsets(s, l, node_h);
    let mut wanted = Vec::with_capacity(layer.len());
    for (&item, o) in layer.iter().zip(&offsets) {
        let is_node = s.items[item].node.is_some();
        // A node follows only its `needs`; a placeholder follows its own edge.
        let pulls: Vec<f64> = (side[item].iter())
            .filter(|(_, kind)| !is_node || *kind == EdgeKind::Needs)
            .map(|&(n, _)| y[n])
            .collect();
        let (target, weight) = if pulls.is_empty() {
            (y[item], NO_OPINION)
        } else if !is_node && s.items[item].kind == EdgeKind::SendBack {
            (mean(&pulls), SEND_BACK)
        } else {
            (mean(&pulls), 1.0)
        };
        wanted.push((target - o, weight));
    }
    for ((&item, o), z) in layer.iter().zip(&offsets).zip(isotonic(&wanted)) {
        y[item] = z + o;
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The non-decreasing sequence nearest to the targets in weighted least squares.
fn isotonic(points: &[(f64, f64)]) -> Vec<f64> {
    // Blocks of (weight, weighted sum, length), each at its weighted mean.
    let mut blocks: Vec<(f64, f64, usize)> = Vec::new();
    for &(target, weight) in points {
        blocks.push((weight, weight * target, 1));
        while let [.., a, b] = blocks.as_slice() {
            if a.1 / a.0 <= b.1 / b.0 {
                break;
            }
            let merged = (a.0 + b.0, a.1 + b.1, a.2 + b.2);
            blocks.truncate(blocks.len() - 2);
            blocks.push(merged);
        }
    }
    blocks
        .into_iter()
        .flat_map(|(w, sum, len)| std::iter::repeat_n(sum / w, len))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::isotonic;

    #[test]
    fn isotonic_pools_violators_by_weight() {
        assert_eq!(isotonic(&[(1.0, 1.0), (2.0, 1.0)]), vec![1.0, 2.0]);
        assert_eq!(isotonic(&[(2.0, 1.0), (0.0, 1.0)]), vec![1.0, 1.0]);
        assert_eq!(isotonic(&[(4.0, 3.0), (0.0, 1.0)]), vec![3.0, 3.0]);
        assert_eq!(isotonic(&[]), Vec::<f64>::new());
    }
}
