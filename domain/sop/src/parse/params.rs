//! `params:` entries: the type each declares, checked as far as the file alone allows.

use marked_yaml::Spanned;

use super::report::Report;
use crate::raw::RawParam;
use crate::{Param, ParamType, Pattern};

/// The parameter `name` as declared by `raw`. Each problem is reported where it is
/// written: an unknown `type`, `enum` without `values`, `values` or `pattern` on a type
/// they do not apply to, a pattern that does not compile, a default its own type refuses.
pub(super) fn param(report: &mut Report<'_>, name: &Spanned<String>, raw: RawParam) -> Param {
    let before = report.diagnostics.len();
    let type_name = raw.kind.as_ref().map_or("string", |k| k.as_str());
    let type_span = raw.kind.as_ref().map_or(name.span(), Spanned::span);
    let kind = match type_name {
        "string" => ParamType::String {
            pattern: raw.pattern.as_ref().and_then(|pattern| {
                Pattern::new(pattern)
                    .map_err(|e| {
                        report.span(
                            pattern.span(),
                            format!("parameter `{}`: invalid `pattern`: {e}", &**name),
                        );
                    })
                    .ok()
            }),
        },
        "int" => ParamType::Int,
        "bool" => ParamType::Bool,
        "enum" => {
            let values = raw.values.as_ref().map(|v| v.to_vec()).unwrap_or_default();
            match &raw.values {
                None => report.span(
                    type_span,
                    format!(
                        "parameter `{}` of type enum needs `values`: the values it accepts",
                        &**name
                    ),
                ),
                Some(v) if v.is_empty() => report.span(
                    v.span(),
                    format!("`values` of parameter `{}` must not be empty", &**name),
                ),
                Some(_) => {}
            }
            ParamType::Enum { values }
        }
        other => {
            report.span(
                type_span,
                format!(
                    "parameter `{}`: unknown type `{other}`; expected string, int, bool or enum",
                    &**name
                ),
            );
            ParamType::default()
        }
    };
    let known = ["string", "int", "bool", "enum"].contains(&type_name);
    if let Some(values) = &raw.values
        && known
        && type_name != "enum"
    {
        report.span(
            values.span(),
            format!(
                "`values` applies only to enum parameters; `{}` is of type {type_name}",
                &**name
            ),
        );
    }
    if let Some(pattern) = &raw.pattern
        && known
        && type_name != "string"
    {
        report.span(
            pattern.span(),
            format!(
                "`pattern` applies only to string parameters; `{}` is of type {type_name}",
                &**name
            ),
        );
    }
    let param = Param {
        required: raw.required,
        default: raw.default.as_ref().map(|d| d.to_string()),
        description: raw.description.unwrap_or_default(),
        kind,
    };
    // A default is checked only against a type that was declared without problems: the
    // message would otherwise repeat them.
    if let Some(default) = &raw.default
        && report.diagnostics.len() == before
        && let Err(e) = param.check(name, default)
    {
        report.span(default.span(), format!("`default`: {e}"));
    }
    param
}
