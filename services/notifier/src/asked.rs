//! What a run's status comment says about the questions its agents asked people: each
//! open one, so whoever reads the issue knows the run waits for a person and where to
//! answer, and the answered ones briefly. The questions are the agents' words: untrusted,
//! so they are cut to one line and Markdown-escaped (no formatting, link or mention).

use gatehouse_store::{ConnectionOwner, QuestionKind, QuestionRow};
use uuid::Uuid;

use crate::notes::{cut, markdown_escape};

/// Answered questions listed; older ones are counted.
pub const ANSWERED_SHOWN: usize = 5;
/// Characters of a question's first line shown.
const QUESTION_CHARS: usize = 200;

/// A question an agent node of the run asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AskedQuestion {
    /// The question's id, as the API and console name it.
    pub id: Uuid,
    /// The agent node that asked.
    pub node: String,
    /// Whether it asked to run a tool (a permission) rather than for an approval.
    pub permission: bool,
    /// As the agent wrote it (untrusted).
    pub question: String,
    /// `open`, `approved`, `denied`, `expired`, `withdrawn`.
    pub status: String,
    /// Who answered, when someone did.
    pub by: Option<String>,
}

impl AskedQuestion {
    /// A stored question of a run's node; none for a conversation's.
    pub fn of(row: &QuestionRow) -> Option<Self> {
        let ConnectionOwner::Node { node, .. } = &row.owner else {
            return None;
        };
        Some(Self {
            id: row.id,
            node: node.clone(),
            permission: row.kind == QuestionKind::Permission,
            question: row.question.clone(),
            status: row.status.as_str().to_owned(),
            by: row.decided_by.clone(),
        })
    }

    fn shown(&self) -> String {
        let first = self
            .question
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        markdown_escape(&cut(first, QUESTION_CHARS))
    }
}

/// The status comment's paragraph on questions: a line per open question, then the
/// answered ones (the newest [`ANSWERED_SHOWN`], then how many more); empty without any.
pub fn questions_markdown(questions: &[AskedQuestion]) -> String {
    let mut out = String::new();
    for q in questions.iter().filter(|q| q.status == "open") {
        let what = if q.permission {
            "wants to run a tool and is waiting for a person"
        } else {
            "is waiting for a person"
        };
        out.push_str(&format!(
            "\nAgent **{}** {what}: “{}” — answer on its card in chat or in the console (question `{}`).\n",
            q.node,
            q.shown(),
            q.id
        ));
    }
    let answered: Vec<&AskedQuestion> = questions.iter().filter(|q| q.status != "open").collect();
    if answered.is_empty() {
        return out;
    }
    out.push_str("\nQuestions answered:\n");
    let skip = answered.len().saturating_sub(ANSWERED_SHOWN);
    if skip > 0 {
        out.push_str(&format!("- {skip} earlier, on the run's page\n"));
    }
    for q in &answered[skip..] {
        let by =
            q.by.as_ref()
                .map(|b| format!(" by {b}"))
                .unwrap_or_default();
        out.push_str(&format!(
            "- **{}** asked “{}” — {}{by}\n",
            q.node,
            q.shown(),
            q.status
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked(n: u128, status: &str, question: &str) -> AskedQuestion {
        AskedQuestion {
            id: Uuid::from_u128(n),
            node: "build".into(),
            permission: false,
            question: question.into(),
            status: status.into(),
            by: (status != "open" && status != "expired").then(|| "ana".into()),
        }
    }

    #[test]
    fn open_questions_say_where_to_answer_and_answered_ones_are_brief() {
        let text = questions_markdown(&[
            asked(1, "approved", "Deploy?"),
            asked(
                2,
                "open",
                "\n May I @here drop [the](http://x) *table*?\nsecond line",
            ),
        ]);
        assert_eq!(
            text,
            "\nAgent **build** is waiting for a person: “May I \\@here drop \\[the\\]\\(http://x\\) \\*table\\*?” — answer on its card in chat or in the console (question `00000000-0000-0000-0000-000000000002`).\n\
             \nQuestions answered:\n- **build** asked “Deploy?” — approved by ana\n"
        );
        let mut tool = asked(3, "open", "agent wants to run `git push`");
        tool.permission = true;
        assert!(questions_markdown(&[tool]).contains(
            "wants to run a tool and is waiting for a person: “agent wants to run \\`git push\\`”"
        ));
        assert_eq!(questions_markdown(&[]), "");
    }

    #[test]
    fn many_answers_are_counted_and_long_questions_cut() {
        let mut all: Vec<AskedQuestion> = (0..8)
            .map(|i| asked(i, "denied", &format!("question {i}")))
            .collect();
        all.push(asked(9, "expired", &"q".repeat(1000)));
        let text = questions_markdown(&all);
        assert!(text.contains("- 4 earlier, on the run's page\n"), "{text}");
        assert!(!text.contains("question 3") && text.contains("question 4"));
        assert!(text.contains(&format!(
            "“{}…” — expired\n",
            "q".repeat(QUESTION_CHARS - 1)
        )));
    }
}
