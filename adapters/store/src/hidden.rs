//! What lists leave out for someone who may not read some projects: the rows of those
//! projects. Rows of no project, or of a project not named, stay in.

/// ` AND (column IS NULL OR column NOT IN ($first, …))` for `hidden` (its placeholders
/// numbered from `first`, bound in order after the query's own); nothing when `hidden` is
/// empty. Filtering in the query, not after it, keeps a `LIMIT` from coming up short.
pub(crate) fn hidden_clause(column: &str, first: usize, hidden: &[String]) -> String {
    if hidden.is_empty() {
        return String::new();
    }
    let placeholders: Vec<String> = (first..first + hidden.len())
        .map(|n| format!("${n}"))
        .collect();
    format!(
        " AND ({column} IS NULL OR {column} NOT IN ({}))",
        placeholders.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clause_names_one_placeholder_per_hidden_project() {
        assert_eq!(hidden_clause("project", 3, &[]), "");
        assert_eq!(
            hidden_clause("r.project", 3, &["a".into(), "b".into()]),
            " AND (r.project IS NULL OR r.project NOT IN ($3, $4))"
        );
    }
}
