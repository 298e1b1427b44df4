use std::collections::BTreeMap;

use gatehouse_agent::{PromptContext, PromptError, RequirementView, check_template, render_prompt};

fn context() -> PromptContext {
    PromptContext {
        requirement: Some(RequirementView {
            title: "Login fails with <script> in the name".to_owned(),
            body: "Steps: sign up as `a&b`, log in.".to_owned(),
            url: Some("https://github.com/acme/app/issues/7".to_owned()),
        }),
        params: BTreeMap::from([("repo".to_owned(), "acme/app".to_owned())]),
        inputs: BTreeMap::from([(
            "plan".to_owned(),
            BTreeMap::from([("plan.md".to_owned(), "1. Fix the form.\n".to_owned())]),
        )]),
        rework_comment: Some("Name the error budget.".to_owned()),
        run_id: "01a2".to_owned(),
        node: "implement".to_owned(),
        attempt: 2,
        project: Some(BTreeMap::from([
            ("name".to_owned(), "shop".to_owned()),
            ("test_command".to_owned(), "cargo test".to_owned()),
        ])),
    }
}

#[test]
fn the_project_and_its_settings_are_variables() {
    let template = "{{ project.name }}: run `{{ project.test_command }}`";
    assert_eq!(check_template(template), Ok(()));
    assert_eq!(
        render_prompt(template, &context()),
        Ok("shop: run `cargo test`".to_owned())
    );
    let Err(error) = render_prompt("{{ project.lint_command }}", &context()) else {
        panic!("rendered");
    };
    assert!(
        error
            .to_string()
            .contains("this run's project settings: name, test_command"),
        "{error}"
    );
    let none = PromptContext {
        project: None,
        ..context()
    };
    let Err(error) = render_prompt("{{ project.name }}", &none) else {
        panic!("rendered");
    };
    assert!(
        error.to_string().contains("guard with {% if project %}"),
        "{error}"
    );
}

#[test]
fn renders_requirement_params_artifacts_and_comment_unescaped() {
    let template = "\
# {{ requirement.title }}
{{ requirement.body }}
Source: {{ requirement.url }}
Repository: {{ params.repo }}

{% for node, files in inputs | items %}
{% for name, text in files | items %}
## {{ node }}/{{ name }}
{{ text }}
{% endfor %}
{% endfor %}
{% if rework_comment %}
The reviewer sent this back: {{ rework_comment }}
{% endif %}
Run {{ run_id }}, node {{ node }}, attempt {{ attempt }}.
";
    assert_eq!(
        render_prompt(template, &context()),
        Ok("\
# Login fails with <script> in the name
Steps: sign up as `a&b`, log in.
Source: https://github.com/acme/app/issues/7
Repository: acme/app

## plan/plan.md
1. Fix the form.

The reviewer sent this back: Name the error budget.
Run 01a2, node implement, attempt 2.
"
        .to_owned())
    );
}

#[test]
fn absent_requirement_and_comment_are_none_not_undefined() {
    let context = PromptContext {
        requirement: None,
        rework_comment: None,
        ..context()
    };
    let template =
        "{% if requirement %}R{% endif %}{% if rework_comment %}C{% endif %}{{ attempt }}";
    assert_eq!(render_prompt(template, &context), Ok("2".to_owned()));
}

#[test]
fn a_misspelt_variable_is_an_error_naming_it_and_its_line() {
    let error = render_prompt("Fix this:\n{{ requirment.title }}\n", &context());
    let Err(error) = error else {
        panic!("rendered: {error:?}");
    };
    assert_eq!(
        error,
        PromptError::Undefined {
            line: Some(2),
            expression: "requirment.title".to_owned(),
            hint: "there is no variable `requirment`; a prompt sees requirement, params, \
                   inputs, rework_comment, run_id, node, attempt, project"
                .to_owned(),
        }
    );
    assert_eq!(
        error.to_string(),
        "prompt template, line 2: `requirment.title` is undefined; there is no variable \
         `requirment`; a prompt sees requirement, params, inputs, rework_comment, run_id, node, \
         attempt, project"
    );
}

#[test]
fn a_missing_param_or_artifact_lists_what_there_is() {
    let Err(error) = render_prompt("{{ params.branch }}", &context()) else {
        panic!("rendered");
    };
    assert_eq!(
        error.to_string(),
        "prompt template, line 1: `params.branch` is undefined; this run's params: repo"
    );
    let Err(error) = render_prompt("\n\n{{ inputs.review['notes.md'] }}", &context()) else {
        panic!("rendered");
    };
    assert_eq!(
        error.to_string(),
        "prompt template, line 3: `inputs.review['notes.md']` is undefined; this run's \
         inputs (by node): plan"
    );
}

#[test]
fn a_missing_requirement_says_to_guard_it() {
    let context = PromptContext {
        requirement: None,
        ..context()
    };
    let Err(error) = render_prompt("{{ requirement.title }}", &context) else {
        panic!("rendered");
    };
    assert!(
        error
            .to_string()
            .contains("this run has no requirement; guard with {% if requirement %}"),
        "{error}"
    );
}

#[test]
fn a_syntax_error_has_its_line() {
    let template = "line one\n{% if rework_comment %}\n{{ rework_comment }\n";
    let expected = Err(PromptError::Syntax {
        line: Some(3),
        message: "syntax error: unexpected `}`, expected end of variable block".to_owned(),
    });
    assert_eq!(render_prompt(template, &context()), expected);
    assert_eq!(check_template(template), expected.map(|_: String| ()));
}

#[test]
fn check_template_accepts_a_good_template() {
    let template = "{% set title = requirement.title %}{{ title }}\
                    {% for i in range(attempt) %}.{% endfor %}{{ params.repo | upper }}";
    assert_eq!(check_template(template), Ok(()));
}

#[test]
fn check_template_finds_an_unknown_variable_and_its_line() {
    let template = "Intro mentions requirment in prose.\n\n{% if rework_comment %}{{ rework_coment }}{% endif %}";
    assert_eq!(
        check_template(template),
        Err(PromptError::Undefined {
            line: Some(3),
            expression: "rework_coment".to_owned(),
            hint: "there is no variable `rework_coment`; a prompt sees requirement, params, \
                   inputs, rework_comment, run_id, node, attempt, project"
                .to_owned(),
        })
    );
}

#[test]
fn other_render_errors_name_the_expression() {
    let Err(error) = render_prompt("{{ attempt | upper }}\n{{ params.repo + 1 }}", &context())
    else {
        panic!("rendered");
    };
    assert!(
        matches!(error, PromptError::Render { line: Some(2), .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("`params.repo + 1`"), "{error}");
}

#[test]
fn the_context_has_exactly_the_documented_variables() {
    let value = serde_json::to_value(context()).unwrap_or_default();
    let keys: Vec<&str> = value
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut expected = [
        "requirement",
        "params",
        "inputs",
        "rework_comment",
        "run_id",
        "node",
        "attempt",
        "project",
    ];
    expected.sort_unstable();
    let mut keys = keys;
    keys.sort_unstable();
    assert_eq!(keys, expected);
}
