//! Typed parameters: the declarations refused where they are written, and the values a
//! run may start with.

use std::collections::BTreeMap;

use gatehouse_sop::{ParamType, Sop, parse};

mod common;
use common::errors;

/// An SOP declaring `params` (YAML lines, indented by two) with one script node.
fn with_params(params: &str) -> String {
    format!("name: x\nparams:\n{params}nodes:\n  a: {{ kind: script, run: ls }}\n")
}

const TYPED: &str = "\
name: typed
params:
  retries: { type: int, default: \"3\" }
  dry_run: { type: bool, default: false }
  env: { type: enum, values: [dev, prod] }
  branch: { pattern: '^[a-z0-9-]+$' }
  note: { type: string }
nodes:
  a: { kind: script, run: ls }
";

fn typed() -> Sop {
    parse("typed.yaml", TYPED).unwrap()
}

fn start(sop: &Sop, params: &[(&str, &str)]) -> Result<(), String> {
    let params: BTreeMap<String, String> = params
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    sop.check_start(&params)
}

#[test]
fn types_are_parsed_and_string_is_the_default() {
    let sop = typed();
    assert_eq!(sop.params["retries"].kind, ParamType::Int);
    assert_eq!(sop.params["retries"].default.as_deref(), Some("3"));
    assert_eq!(sop.params["dry_run"].kind, ParamType::Bool);
    assert_eq!(sop.params["dry_run"].default.as_deref(), Some("false"));
    assert_eq!(
        sop.params["env"].kind,
        ParamType::Enum {
            values: vec!["dev".into(), "prod".into()]
        }
    );
    let ParamType::String {
        pattern: Some(pattern),
    } = &sop.params["branch"].kind
    else {
        panic!("branch has a pattern")
    };
    assert_eq!(pattern.as_str(), "^[a-z0-9-]+$");
    assert_eq!(sop.params["note"].kind, ParamType::String { pattern: None });
}

#[test]
fn values_that_fit_their_types_start() {
    let sop = typed();
    assert_eq!(start(&sop, &[]), Ok(()));
    assert_eq!(
        start(
            &sop,
            &[
                ("retries", "-12"),
                ("dry_run", "true"),
                ("env", "prod"),
                ("branch", "fix-42"),
                ("note", "anything; at all"),
            ]
        ),
        Ok(())
    );
    assert_eq!(
        start(&sop, &[("retries", &i64::MAX.to_string())]),
        Ok(()),
        "an int is an i64"
    );
}

#[test]
fn a_value_its_type_refuses_is_named_with_what_is_allowed() {
    let sop = typed();
    assert_eq!(
        start(&sop, &[("retries", "abc")]),
        Err("parameter `retries` must be an integer, got `abc`".into())
    );
    assert_eq!(
        start(&sop, &[("retries", "9223372036854775808")]),
        Err("parameter `retries` must be an integer, got `9223372036854775808`".into()),
        "beyond i64"
    );
    assert_eq!(
        start(&sop, &[("retries", "1.5")]),
        Err("parameter `retries` must be an integer, got `1.5`".into())
    );
    assert_eq!(
        start(&sop, &[("dry_run", "yes")]),
        Err("parameter `dry_run` must be true or false, got `yes`".into())
    );
    assert_eq!(
        start(&sop, &[("dry_run", "True")]),
        Err("parameter `dry_run` must be true or false, got `True`".into())
    );
    assert_eq!(
        start(&sop, &[("env", "x")]),
        Err("parameter `env` must be one of: dev, prod; got `x`".into())
    );
    assert_eq!(
        start(&sop, &[("branch", "a b")]),
        Err("parameter `branch` must match `^[a-z0-9-]+$`, got `a b`".into())
    );
}

#[test]
fn a_pattern_must_match_the_whole_value() {
    let sop = parse("p.yaml", &with_params("  tag: { pattern: 'v[0-9]+' }\n")).unwrap();
    assert_eq!(start(&sop, &[("tag", "v12")]), Ok(()));
    for partial in ["xv12", "v12x", "v1\nrm -rf /"] {
        assert!(start(&sop, &[("tag", partial)]).is_err(), "{partial:?}");
    }
    let alternatives = parse("p.yaml", &with_params("  tag: { pattern: 'a|b' }\n")).unwrap();
    assert_eq!(
        start(&alternatives, &[("tag", "ab")]),
        Err("parameter `tag` must match `a|b`, got `ab`".into()),
        "the anchors hold around alternatives"
    );
}

#[test]
fn a_refused_value_is_repeated_on_one_line_and_cut_short() {
    let sop = typed();
    assert_eq!(
        start(&sop, &[("env", "dev\nok: forged")]),
        Err("parameter `env` must be one of: dev, prod; got `dev\\nok: forged`".into())
    );
    let long = "x".repeat(200);
    let message = start(&sop, &[("retries", &long)]).unwrap_err();
    assert_eq!(
        message,
        format!(
            "parameter `retries` must be an integer, got `{}…`",
            "x".repeat(80)
        )
    );
}

#[test]
fn missing_and_unknown_parameters_are_refused_before_values_are_checked() {
    let sop = parse(
        "r.yaml",
        &with_params("  n: { type: int, required: true }\n"),
    )
    .unwrap();
    assert_eq!(start(&sop, &[]), Err("`x` needs the parameters: n".into()));
    assert_eq!(
        start(&sop, &[("n", "1"), ("m", "z")]),
        Err("`x` has no parameter `m`".into())
    );
}

#[test]
fn declarations_are_refused_where_they_are_written() {
    assert_eq!(
        errors(&with_params("  n: { type: float }\n")),
        [
            "sops/x.yaml:3:14: parameter `n`: unknown type `float`; expected string, int, bool or enum"
        ]
    );
    assert_eq!(
        errors(&with_params("  env: { type: enum }\n")),
        ["sops/x.yaml:3:16: parameter `env` of type enum needs `values`: the values it accepts"]
    );
    assert_eq!(
        errors(&with_params("  env: { type: enum, values: [] }\n")),
        ["sops/x.yaml:3:30: `values` of parameter `env` must not be empty"]
    );
    assert_eq!(
        errors(&with_params("  n: { type: int, values: [1, 2] }\n")),
        ["sops/x.yaml:3:27: `values` applies only to enum parameters; `n` is of type int"]
    );
    assert_eq!(
        errors(&with_params("  s: { values: [a] }\n")),
        ["sops/x.yaml:3:16: `values` applies only to enum parameters; `s` is of type string"],
        "a parameter without `type` is a string"
    );
    assert_eq!(
        errors(&with_params("  b: { type: bool, pattern: 'tr.e' }\n")),
        ["sops/x.yaml:3:29: `pattern` applies only to string parameters; `b` is of type bool"]
    );
    assert_eq!(
        errors(&with_params("  s:\n    pattern: '[a-z'\n")),
        ["sops/x.yaml:4:14: parameter `s`: invalid `pattern`: unclosed character class"]
    );
    assert_eq!(
        errors(&with_params("  s:\n    pattern: 'a)|(b'\n")),
        ["sops/x.yaml:4:14: parameter `s`: invalid `pattern`: unopened group"],
        "a pattern cannot close the group that anchors it"
    );
}

#[test]
fn a_default_must_satisfy_its_own_type() {
    assert_eq!(
        errors(&with_params(
            "  n:\n    type: int\n    default: many\n  b: { type: bool, default: \"yes\" }\n  e: { type: enum, values: [dev], default: prod }\n  s: { pattern: '[a-z]+', default: A1 }\n"
        )),
        [
            "sops/x.yaml:5:14: `default`: parameter `n` must be an integer, got `many`",
            "sops/x.yaml:6:29: `default`: parameter `b` must be true or false, got `yes`",
            "sops/x.yaml:7:44: `default`: parameter `e` must be one of: dev; got `prod`",
            "sops/x.yaml:8:36: `default`: parameter `s` must match `[a-z]+`, got `A1`",
        ]
    );
    assert_eq!(
        errors(&with_params("  n: { type: integer, default: x }\n")),
        [
            "sops/x.yaml:3:14: parameter `n`: unknown type `integer`; expected string, int, bool or enum"
        ],
        "a default is not checked against a type that is itself wrong"
    );
}

#[test]
fn a_typed_parameter_serializes_with_its_type_beside_its_other_keys() {
    insta::assert_json_snapshot!(typed().params, @r#"
    {
      "retries": {
        "required": false,
        "default": "3",
        "description": "",
        "type": "int"
      },
      "dry_run": {
        "required": false,
        "default": "false",
        "description": "",
        "type": "bool"
      },
      "env": {
        "required": false,
        "default": null,
        "description": "",
        "type": "enum",
        "values": [
          "dev",
          "prod"
        ]
      },
      "branch": {
        "required": false,
        "default": null,
        "description": "",
        "type": "string",
        "pattern": "^[a-z0-9-]+$"
      },
      "note": {
        "required": false,
        "default": null,
        "description": "",
        "type": "string",
        "pattern": null
      }
    }
    "#);
}
