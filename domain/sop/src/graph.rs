//! The `needs` graph: cycles, and what lies upstream of a node.

use std::collections::BTreeSet;

/// `needs[i]` lists the indices node `i` needs.
pub(crate) struct Graph<'a> {
    needs: &'a [Vec<usize>],
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    New,
    Active,
    Done,
}

impl<'a> Graph<'a> {
    pub(crate) fn new(needs: &'a [Vec<usize>]) -> Self {
        Self { needs }
    }

    /// Each cycle once, as the nodes along it starting at the one first in file order.
    pub(crate) fn cycles(&self) -> Vec<Vec<usize>> {
        let mut marks = vec![Mark::New; self.needs.len()];
        let mut found = Vec::new();
        for start in 0..self.needs.len() {
            if marks[start] == Mark::New {
                self.visit(start, &mut marks, &mut Vec::new(), &mut found);
            }
        }
        found
    }

    fn visit(
        &self,
        node: usize,
        marks: &mut [Mark],
        path: &mut Vec<usize>,
        found: &mut Vec<Vec<usize>>,
    ) {
        marks[node] = Mark::Active;
        path.push(node);
        for &next in &self.needs[node] {
            match marks[next] {
                Mark::New => self.visit(next, marks, path, found),
                Mark::Active => {
                    let from = path.iter().position(|&n| n == next).unwrap_or(0);
                    let mut cycle = path[from..].to_vec();
                    // `needs` points upstream; report in the order work would flow.
                    cycle.reverse();
                    let first = (0..cycle.len()).min_by_key(|&i| cycle[i]).unwrap_or(0);
                    cycle.rotate_left(first);
                    found.push(cycle);
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks[node] = Mark::Done;
    }

    /// Every node `node` needs, directly or through others.
    pub(crate) fn upstream(&self, node: usize) -> BTreeSet<usize> {
        let mut seen = BTreeSet::new();
        let mut stack = self.needs[node].clone();
        while let Some(n) = stack.pop() {
            if seen.insert(n) {
                stack.extend(&self.needs[n]);
            }
        }
        seen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_cycles_and_upstream_nodes() {
        // 0 <- 1 <- 2 <- 1 (cycle 1,2), 3 needs 0
        let needs = vec![vec![], vec![0, 2], vec![1], vec![0]];
        let g = Graph::new(&needs);
        assert_eq!(g.cycles(), vec![vec![1, 2]]);
        assert_eq!(g.upstream(3), BTreeSet::from([0]));
        assert_eq!(g.upstream(2), BTreeSet::from([0, 1, 2]));
    }

    #[test]
    fn a_dag_has_no_cycles() {
        let needs = vec![vec![], vec![0], vec![0], vec![1, 2]];
        assert!(Graph::new(&needs).cycles().is_empty());
        assert_eq!(Graph::new(&needs).upstream(3), BTreeSet::from([0, 1, 2]));
    }
}
