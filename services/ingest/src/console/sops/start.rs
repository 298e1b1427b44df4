//! Starting a run from an SOP's page: one input per typed parameter (a number for `int`,
//! a choice for `bool` and `enum`, text for `string`, defaults filled in), the project and
//! repositories to work on, an issue. The form posts the API's `POST /runs` in another
//! encoding: the same scope, the SOP's starters, the project's `run` list and the typed
//! parameter checks, in the API's own handler. A refused start shows the page again
//! with what was typed and why.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use gatehouse_project::Right;
use gatehouse_sop::{Param, ParamType, Sop};
use maud::{Markup, html};
use serde::Deserialize;

use super::super::actions::allowed;
use super::super::page::{PageError, csrf_field, redirect};
use super::super::session::{Posted, Viewer, WithCsrf};
use crate::api::runs;
use crate::rights::Scope;
use crate::views::StartRun;
use crate::{ApiError, ApiState, projects};

/// Each parameter's field is named `param.NAME`.
const PARAM: &str = "param.";

/// What the start form shows: the values posted and why the start was refused, or
/// nothing (the defaults) on a fresh page.
#[derive(Debug, Default)]
pub(crate) struct Filled {
    values: BTreeMap<String, String>,
    error: Option<String>,
}

/// The start form's fields, whatever parameters the SOP declares.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub(crate) struct StartForm {
    fields: BTreeMap<String, String>,
}

impl WithCsrf for StartForm {
    fn csrf(&self) -> &str {
        self.fields.get("csrf").map_or("", String::as_str)
    }
}

/// `POST /sops/{name}/start`
pub(crate) async fn start(
    State(api): State<ApiState>,
    Path(name): Path<String>,
    posted: Posted<StartForm>,
) -> Result<Response, PageError> {
    let caller = allowed(&posted.viewer, "/runs")?;
    let fields = posted.form.fields;
    let given = |key: &str| {
        fields
            .get(key)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let params: BTreeMap<String, String> = fields
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(PARAM)?.to_owned(), v.trim().to_owned())))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let body = StartRun {
        sop: name.clone(),
        params,
        project: given("project"),
        repositories: given("repositories")
            .map(|r| {
                r.split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        issue: given("issue"),
    };
    match runs::start(State(api.clone()), caller, Json(body)).await {
        Ok((_, Json(accepted))) => Ok(redirect(&format!("/runs/{}?done=started", accepted.run_id))),
        // What the person can change: shown in the form, with what they typed.
        Err(
            e @ (ApiError::Unprocessable(_) | ApiError::Forbidden(_) | ApiError::BadRequest(_)),
        ) => {
            let status = e.status();
            let mut values = fields;
            values.remove("csrf");
            let filled = Filled {
                values,
                error: Some(e.to_string()),
            };
            let page = super::render(&api, &posted.viewer, &name, None, &filled).await?;
            Ok((status, page).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

/// The form, for those who may start the SOP (the `run` scope and its `starters`).
pub(crate) fn form(api: &ApiState, viewer: &Viewer, sop: &Sop, filled: &Filled) -> Markup {
    if !viewer.caller.scopes.has(Scope::Run)
        || !sop.may_start(viewer.person(), &viewer.caller.groups)
    {
        return html! {};
    }
    let person = viewer.person();
    let groups = &viewer.caller.groups;
    let choices: Vec<&str> = api
        .projects
        .iter()
        .filter(|p| projects::require(p, Right::Run, Some(person), groups).is_ok())
        .map(|p| p.name())
        .collect();
    let value = |key: &str| filled.values.get(key).map(String::as_str);
    html! {
        section id="start" aria-labelledby="start-h" {
            h2 id="start-h" { "Start a run" }
            @if let Some(why) = &sop.unavailable {
                p.error { "Runs of it cannot start here: " (why) }
            } @else {
                form.start method="post" action=(format!("/sops/{}/start", sop.name)) {
                    (csrf_field(viewer))
                    @if let Some(error) = &filled.error {
                        p.error role="alert" id="start-error" { (error) }
                    }
                    div.fields {
                        @for (name, param) in &sop.params {
                            (param_field(name, param, value(&format!("{PARAM}{name}"))))
                        }
                        @if !choices.is_empty() {
                            div.field {
                                label for="start-project" { "Project" }
                                select id="start-project" name="project" {
                                    option value="" { "found from the repositories or issue" }
                                    @for p in &choices {
                                        option value=(p) selected[value("project") == Some(*p)] { (p) }
                                    }
                                }
                            }
                        }
                        div.field {
                            label for="start-repositories" { "Repositories" }
                            input id="start-repositories" name="repositories" type="text" placeholder="owner/name, owner/other" value=[value("repositories")];
                            span.hint { "all of the project's when left empty" }
                        }
                        div.field {
                            label for="start-issue" { "Issue" }
                            input id="start-issue" name="issue" type="text" placeholder="owner/name#42" value=[value("issue")];
                            span.hint { "the run works on it, and its pull request closes it" }
                        }
                    }
                    button.approve type="submit" { "Start a run" }
                }
            }
        }
    }
}

/// One parameter's input, by its type, showing `posted` or else its default.
fn param_field(name: &str, param: &Param, posted: Option<&str>) -> Markup {
    let id = format!("param-{name}");
    let field = format!("{PARAM}{name}");
    let value = posted.or(param.default.as_deref());
    let required = param.required && param.default.is_none();
    let choices: Option<Vec<&str>> = match &param.kind {
        ParamType::Bool => Some(vec!["true", "false"]),
        ParamType::Enum { values } => Some(values.iter().map(String::as_str).collect()),
        _ => None,
    };
    html! {
        div.field {
            label for=(id) { code { (name) } @if required { " (required)" } }
            @match (&param.kind, choices) {
                (_, Some(choices)) => {
                    select id=(id) name=(field) required[required] {
                        @if !required || value.is_none() { option value="" { "—" } }
                        @for c in choices { option value=(c) selected[value == Some(c)] { (c) } }
                    }
                }
                (ParamType::Int, None) => {
                    input id=(id) name=(field) type="number" step="1" inputmode="numeric" value=[value] required[required];
                }
                _ => {
                    input id=(id) name=(field) type="text" value=[value] required[required];
                }
            }
            @if !param.description.is_empty() { span.hint { (param.description) } }
        }
    }
}
