//! The console over HTTP, on Postgres and on SQLite: signing in with one-time links, the
//! session cookie and CSRF tokens, the inbox deciding gates through the API's checked
//! path, the run page (graph, attempts, artifacts, output, audit trail), requirements,
//! and what hostile input comes to. A browser drives the same pages in
//! `console_browser.rs`.

use chrono::{Duration, Utc};
use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scope};
use gatehouse_store::{ConnectionOwner, ConnectionRow, ConnectionVerdict, SpendLimit};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends, person};
use serde_json::json;
use uuid::Uuid;

on_both_backends!(
    a_login_link_signs_in_once,
    signing_out_ends_the_session_everywhere,
    forms_need_this_sessions_csrf_token,
    the_inbox_decides_through_the_checked_path,
    those_who_may_not_decide_see_no_buttons_and_are_refused,
    the_run_page_shows_the_work_and_the_audit_trail,
    hostile_text_is_escaped_and_markdown_sanitised,
    a_runs_connections_are_in_its_detail_and_on_its_page_refused_first,
    a_runs_budgets_are_on_its_page_beside_their_limits,
    long_output_is_paged_never_loaded_whole,
    requirements_and_graphs_are_served,
    sops_schedules_and_reports_have_pages,
    github_signs_in_the_person_whose_login_it_is,
    an_sop_page_starts_a_run_with_typed_parameters,
    the_runs_list_and_run_page_say_who_what_and_how_long,
);

/// A reviewable run: a draft that writes Markdown (and its rework comment), a gate leads
/// decide that may send it back, and a last step.
const REVIEW: &str = r#"name: review
title: "Review <b>this</b> & ship"
nodes:
  draft:
    kind: script
    run: |
      printf '# Notes\n\nattempt %s: %s\n\n<script>alert(1)</script>\n' "$GATEHOUSE_ATTEMPT" "$GATEHOUSE_REWORK_COMMENT" > "$GATEHOUSE_ARTIFACTS/notes.md"
      echo 'draft says <img src=x onerror=alert(1)>'
    artifacts: [notes.md]
  check: { kind: gate, needs: [draft], approvers: [group:leads], send_back: [draft] }
  after: { kind: script, needs: [check], run: 'echo shipped' }
"#;

/// Typed parameters for the start form; its one step prints nothing.
const TYPED: &str = r#"name: typed
title: Typed parameters
params:
  count: { type: int, default: "3", description: How many. }
  dry: { type: bool, default: "false" }
  tier: { type: enum, values: [small, large], required: true }
  tag: { pattern: 'v[0-9]+' }
nodes:
  quiet: { kind: script, run: 'true' }
"#;

/// A project anyone may run and read, for runs with a requirement.
const PROJECTS: &str = r#"
[[projects]]
name = "web"
repositories = [{ repo = "acme/web" }]
"#;

/// Writes many lines of output.
const CHATTY: &str = r#"name: chatty
nodes:
  talk: { kind: script, run: 'i=0; while [ $i -lt 2500 ]; do echo "line $i"; i=$((i+1)); done' }
"#;

async fn start(backend: Backend) -> Gatehouse {
    Gatehouse::builder(backend)
        .sops(&[("review", REVIEW), ("chatty", CHATTY), ("typed", TYPED)])
        .projects(PROJECTS)
        .people(vec![
            person("ana", &["leads"]),
            person("bo", &["leads"]),
            person("cy", &[]),
            person("bob", &[]),
        ])
        .start()
        .await
}

/// A `review` run (requested by bob) waiting at its gate.
async fn waiting_review(gh: &Gatehouse) -> Uuid {
    let run = gh.request("review").await;
    gh.node(run, "check", "waiting_approval", 1).await;
    run
}

async fn a_login_link_signs_in_once(backend: Backend) {
    let gh = start(backend).await;
    // A gate ana could decide with a token that may decide: the read-only session below
    // must not be offered it.
    let run = waiting_review(&gh).await;
    let ana = gh.stored_token("ana", &[Scope::Read], None).await;
    let link = gh.login_link(&ana, "ana").await;
    // Anyone may ask for their own link; only an administrator for someone else's.
    gh.api_as(&ana)
        .post("/login-links", json!({ "person": "bo" }))
        .await
        .refused(403, "only an administrator");

    // Without a session every page sends you to sign in, and back afterwards.
    let mut browser = gh.browser();
    let page = browser.get("/runs").await.expect_status(303);
    assert_eq!(page.location(), "/signin?next=%2Fruns");
    // A link followed from another site (a chat card) comes without the SameSite=Strict
    // cookie: the page reloads itself from this origin, which brings the cookie along.
    let from_chat = gh
        .http
        .get(format!("{}/runs", gh.url))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(from_chat.status(), 200);
    assert!(
        from_chat
            .text()
            .await
            .unwrap()
            .contains("http-equiv=\"refresh\"")
    );
    let page = browser.get("/signin?next=%2Fruns").await.expect_status(200);
    assert!(page.contains("gatehouse login"), "{}", page.html);

    // Opening the link does not use it (chat previews open links); the button does.
    let page = browser.get(&link).await.expect_status(200);
    assert!(page.contains("Sign in as ana"), "{}", page.html);
    let secret = link.trim_start_matches("/login/");
    let page = browser
        .post("/login", &[("link", secret), ("next", "/runs")])
        .await
        .expect_status(303);
    assert_eq!(page.location(), "/runs");
    let cookie = page.headers["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let page = browser.get("/").await.expect_status(200);
    assert!(page.contains("Signed in as"), "{}", page.html);
    // The session has no more than the token that asked for the link: read only, so the
    // gate waiting for ana's group is not offered to it.
    assert!(
        !page.contains("decide"),
        "a read-only session offers no decisions"
    );
    assert!(
        page.contains("1 more gate waits for other people"),
        "{}",
        page.html
    );
    let run_page = browser
        .get(&format!("/runs/{run}"))
        .await
        .expect_status(200);
    assert!(
        !run_page.contains("/gates/check/decide"),
        "{}",
        run_page.html
    );

    // Used once: a second browser with the same link is refused, and so is a replay.
    let mut other = gh.browser();
    let page = other.get(&link).await.expect_status(410);
    assert!(page.contains("already used"), "{}", page.html);
    other
        .post("/login", &[("link", secret), ("next", "/")])
        .await
        .expect_status(410);
    assert!(other.cookie.is_none());

    // An expired link, an unknown one, and a link for someone since removed.
    let stale = gatehouse_ingest::new_token();
    gh.db
        .store
        .create_login_link(
            &gatehouse_ingest::hash_token(&stale),
            "ana",
            "ana",
            "read",
            Utc::now() - Duration::seconds(1),
        )
        .await
        .unwrap();
    let page = other
        .get(&format!("/login/{stale}"))
        .await
        .expect_status(410);
    assert!(page.contains("has expired"), "{}", page.html);
    other
        .post("/login", &[("link", &stale), ("next", "/")])
        .await
        .expect_status(410);
    let page = other
        .get("/login/nothing-like-a-link")
        .await
        .expect_status(404);
    assert!(page.contains("not one Gatehouse made"), "{}", page.html);

    // Where to go afterwards is always a path here, never another site.
    let admin = gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    let link = gh.login_link(&admin, "cy").await;
    let mut cy = gh.browser();
    cy.get(&link).await.expect_status(200);
    let page = cy
        .post(
            "/login",
            &[
                ("link", link.trim_start_matches("/login/")),
                ("next", "//evil.test/x"),
            ],
        )
        .await
        .expect_status(303);
    assert_eq!(page.location(), "/");
    gh.stop().await;
}

async fn signing_out_ends_the_session_everywhere(backend: Backend) {
    let gh = start(backend).await;
    let mut browser = gh.signed_in("ana").await;
    let stolen = browser.cookie.clone();
    browser.get("/").await.expect_status(200);
    let page = browser
        .submit("/", "/signout", &[])
        .await
        .expect_status(303);
    assert_eq!(page.location(), "/signin?signed_out=1");
    assert!(browser.cookie.is_none(), "the cookie is cleared");
    // The same cookie, replayed from anywhere, no longer signs anyone in.
    let mut thief = gh.browser();
    thief.cookie = stolen;
    thief.get("/").await.expect_status(303);
    let page = thief
        .post("/signout", &[("csrf", "anything")])
        .await
        .expect_status(303);
    assert!(
        page.location().starts_with("/signin"),
        "{}",
        page.location()
    );
    gh.stop().await;
}

async fn forms_need_this_sessions_csrf_token(backend: Backend) {
    let gh = start(backend).await;
    let run = waiting_review(&gh).await;
    let mut ana = gh.signed_in("ana").await;
    let mut bo = gh.signed_in("bo").await;
    let action = format!("/runs/{run}/gates/check/decide");
    let decide = |csrf: &'static str| {
        vec![
            ("csrf", csrf),
            ("decision", "approve"),
            ("attempt", "1"),
            ("next", "/"),
        ]
    };
    // No token, a forged one, and bo's token in ana's session: all refused.
    let page = ana
        .post(&action, &[("decision", "approve"), ("attempt", "1")])
        .await;
    assert!(page.status == 400 || page.status == 403, "{page:?}");
    let page = ana
        .post(&action, &decide("forged"))
        .await
        .expect_status(403);
    assert!(page.contains("security token"), "{}", page.html);
    let bos = bo.get("/").await.csrf().unwrap();
    let fields = [
        ("csrf", bos.as_str()),
        ("decision", "approve"),
        ("attempt", "1"),
    ];
    ana.post(&action, &fields).await.expect_status(403);
    // A form posted from another site is refused before anything else.
    let anas = ana.get("/").await.csrf().unwrap();
    let response = gh
        .http
        .post(format!("{}{action}", gh.url))
        .header("cookie", ana.cookie.clone().unwrap())
        .header("origin", "https://evil.test")
        .form(&[
            ("csrf", anas.as_str()),
            ("decision", "approve"),
            ("attempt", "1"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    // Nothing was decided.
    assert!(gh.db.store.decisions(run).await.unwrap().is_empty());
    gh.node(run, "check", "waiting_approval", 1).await;
    gh.stop().await;
}

async fn the_inbox_decides_through_the_checked_path(backend: Backend) {
    let gh = start(backend).await;
    let run = waiting_review(&gh).await;
    let mut ana = gh.signed_in("ana").await;
    let inbox = ana.get("/").await.expect_status(200);
    assert!(inbox.contains("Waiting for you"), "{}", inbox.html);
    // How long the gate has waited, with the moment itself, and its evidence: the draft's
    // notes (what the gate needs keeps), linked and rendered in the card, sanitised.
    assert!(
        inbox.contains("<span class=\"waited\">waiting <time datetime=\"")
            && inbox.contains("less than a minute</time>"),
        "{}",
        inbox.html
    );
    assert!(
        inbox.contains(&format!("href=\"/runs/{run}/artifacts/draft/1/notes.md\""))
            && inbox.contains("<h1>Notes</h1>"),
        "{}",
        inbox.html
    );
    assert!(!inbox.contains("<script>alert"), "{}", inbox.html);
    assert!(
        inbox.contains(&format!("/runs/{run}/gates/check/decide")),
        "{}",
        inbox.html
    );

    // Send back with a comment: the draft runs again and sees it.
    let action = format!("/runs/{run}/gates/check/decide");
    let page = ana
        .submit(
            "/",
            &action,
            &[
                ("decision", "send_back"),
                ("to", "draft"),
                ("attempt", "1"),
                ("comment", "name the error budget"),
                ("next", "/"),
            ],
        )
        .await
        .expect_status(303);
    assert_eq!(page.location(), "/?done=sent_back");
    gh.node(run, "check", "waiting_approval", 2).await;
    let notes = gh.artifact(run, "draft", 2, "notes.md");
    assert!(
        notes.contains("attempt 2: name the error budget"),
        "{notes}"
    );

    // A decision on the earlier attempt is refused by the same check the API makes.
    ana.submit(
        "/",
        &action,
        &[("decision", "approve"), ("attempt", "1"), ("next", "/")],
    )
    .await
    .expect_status(409);

    // Approve from the run page; the run finishes.
    let page = ana
        .submit(
            &format!("/runs/{run}"),
            &action,
            &[
                ("decision", "approve"),
                ("attempt", "2"),
                ("next", &format!("/runs/{run}")),
            ],
        )
        .await
        .expect_status(303);
    assert_eq!(page.location(), format!("/runs/{run}?done=approved"));
    gh.wait_run(run, "succeeded").await;
    // A second click on a settled gate says who settled it.
    let page = ana
        .submit(
            "/",
            &action,
            &[("decision", "approve"), ("attempt", "2"), ("next", "/")],
        )
        .await;
    assert!(page.status == 409 || page.status == 422, "{page:?}");
    let decisions = gh.db.store.decisions(run).await.unwrap();
    let channels: Vec<&str> = decisions.iter().map(|d| d.channel.as_str()).collect();
    assert_eq!(
        channels,
        ["api", "api"],
        "the console decides as the API does"
    );
    gh.stop().await;
}

async fn those_who_may_not_decide_see_no_buttons_and_are_refused(backend: Backend) {
    let gh = start(backend).await;
    let run = waiting_review(&gh).await;
    // cy is in no group: the gate is not hers to decide.
    let mut cy = gh.signed_in("cy").await;
    let inbox = cy.get("/").await.expect_status(200);
    assert!(
        inbox.contains("No gate or agent is waiting for your decision"),
        "{}",
        inbox.html
    );
    assert!(
        inbox.contains("1 more gate waits for other people"),
        "{}",
        inbox.html
    );
    let page = cy.get(&format!("/runs/{run}")).await.expect_status(200);
    assert!(
        !page.contains("/gates/check/decide"),
        "no decision form for cy"
    );
    let page = cy
        .submit(
            "/",
            &format!("/runs/{run}/gates/check/decide"),
            &[("decision", "approve"), ("attempt", "1")],
        )
        .await
        .expect_status(403);
    assert!(
        page.contains("may not") || page.contains("cannot"),
        "{}",
        page.html
    );
    // bob asked for the run: the requester may not approve his own work.
    let mut bob = gh.signed_in("bob").await;
    let page = bob.get(&format!("/runs/{run}")).await.expect_status(200);
    assert!(!page.contains("/gates/check/decide"));
    // A lead who asked for a run may not approve it, but may send it back or reject it,
    // as through the API: those are the buttons she gets.
    let hers = gatehouse_tests::request_runs(&gh.db.store, "review", 1, "ana").await[0];
    gh.node(hers, "check", "waiting_approval", 1).await;
    let mut ana = gh.signed_in("ana").await;
    let page = ana.get(&format!("/runs/{hers}")).await.expect_status(200);
    let form = page.html.split("id=\"decide\"").nth(1).unwrap_or_default();
    assert!(
        form.contains("value=\"send_back\"") && form.contains("value=\"reject\""),
        "{}",
        page.html
    );
    assert!(!form.contains("value=\"approve\""), "{}", page.html);
    // A read-only session sees the run but may neither decide nor command it.
    let ana_read = gh.stored_token("ana", &[Scope::Read], None).await;
    let link = gh.login_link(&ana_read, "ana").await;
    let mut reader = gh.browser();
    reader.sign_in(&link).await.expect_status(303);
    let page = reader.get(&format!("/runs/{run}")).await.expect_status(200);
    assert!(!page.contains("/gates/check/decide") && !page.contains("Cancel the run"));
    reader
        .submit(
            "/",
            &format!("/runs/{run}/command"),
            &[("command", "cancel")],
        )
        .await
        .expect_status(403);
    reader
        .submit(
            "/",
            &format!("/runs/{run}/gates/check/decide"),
            &[("decision", "approve"), ("attempt", "1")],
        )
        .await
        .expect_status(403);
    assert!(gh.db.store.decisions(run).await.unwrap().is_empty());
    gh.node(run, "check", "waiting_approval", 1).await;
    gh.stop().await;
}

async fn the_run_page_shows_the_work_and_the_audit_trail(backend: Backend) {
    let gh = start(backend).await;
    let run = waiting_review(&gh).await;
    let mut ana = gh.signed_in("ana").await;
    let page = ana.get(&format!("/runs/{run}")).await.expect_status(200);
    for expected in [
        "<svg",                                             // the graph, inline
        "id=\"node-draft\"",                                // each node's section
        "Attempts of draft",                                // its attempts
        &format!("/runs/{run}/artifacts/draft/1/notes.md"), // its artifacts
        "draft says",                                       // the output's end
        &format!("/runs/{run}/events?after="),              // followed live while it runs
        "Cancel the run",                                   // commands for those with `run`
        "No decisions yet.",
    ] {
        assert!(
            page.contains(expected),
            "the run page lacks {expected}:\n{}",
            page.html
        );
    }
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );

    // Pause and resume through the page's commands.
    ana.submit(
        &format!("/runs/{run}"),
        &format!("/runs/{run}/command"),
        &[("command", "pause")],
    )
    .await
    .expect_status(303);
    gh.wait_run(run, "paused").await;
    ana.submit(
        &format!("/runs/{run}"),
        &format!("/runs/{run}/command"),
        &[("command", "resume")],
    )
    .await
    .expect_status(303);
    // The decision lands in the audit trail with who, where and the comment.
    ana.submit(
        "/",
        &format!("/runs/{run}/gates/check/decide"),
        &[
            ("decision", "approve"),
            ("attempt", "1"),
            ("comment", "looks right"),
        ],
    )
    .await
    .expect_status(303);
    gh.wait_run(run, "succeeded").await;
    let page = ana.get(&format!("/runs/{run}")).await.expect_status(200);
    assert!(
        page.contains("looks right") && page.contains(">ana<"),
        "{}",
        page.html
    );
    assert!(
        !page.contains("/events?after="),
        "a finished run is not followed"
    );
    assert!(!page.contains("Cancel the run"));
    gh.stop().await;
}

async fn hostile_text_is_escaped_and_markdown_sanitised(backend: Backend) {
    let gh = start(backend).await;
    let run = waiting_review(&gh).await;
    let mut ana = gh.signed_in("ana").await;
    ana.submit(
        "/",
        &format!("/runs/{run}/gates/check/decide"),
        &[
            ("decision", "send_back"),
            ("to", "draft"),
            ("attempt", "1"),
            ("comment", "<script>alert('comment')</script>"),
        ],
    )
    .await
    .expect_status(303);
    gh.node(run, "check", "waiting_approval", 2).await;
    let page = ana.get(&format!("/runs/{run}")).await.expect_status(200);
    assert!(
        !page.contains("<script>alert"),
        "script in a comment: {}",
        page.html
    );
    assert!(
        page.contains("&lt;script&gt;alert('comment')"),
        "{}",
        page.html
    );
    assert!(!page.contains("<img src=x"), "markup in the output");
    assert!(!page.contains("<b>this</b>"), "markup in the SOP's title");
    let page = ana
        .get(&format!("/runs/{run}/artifacts/draft/2/notes.md"))
        .await
        .expect_status(200);
    assert!(
        page.contains("<h1>Notes</h1>"),
        "Markdown is rendered: {}",
        page.html
    );
    assert!(
        !page.contains("<script>alert(1)"),
        "and sanitised: {}",
        page.html
    );
    let download = ana
        .get(&format!("/runs/{run}/download/draft/2/notes.md"))
        .await
        .expect_status(200);
    assert!(
        download.headers["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    assert_eq!(download.headers["x-content-type-options"], "nosniff");
    // A name no run recorded is 404, not a file from elsewhere on disk.
    ana.get(&format!(
        "/runs/{run}/artifacts/draft/2/..%2F..%2Fgatehouse.db"
    ))
    .await
    .expect_status(404);
    gh.stop().await;
}

/// What the runner records of a sandbox's egress comes back under its attempt in the API
/// and in the run page's "Network" table, refused first, hostile hosts escaped.
async fn a_runs_connections_are_in_its_detail_and_on_its_page_refused_first(backend: Backend) {
    let gh = start(backend).await;
    let run = waiting_review(&gh).await;
    let at = Utc::now();
    let row = |host: &str, reason: Option<&str>| ConnectionRow {
        owner: ConnectionOwner::Node {
            run_id: run,
            node: "draft".into(),
        },
        attempt: 1,
        host: host.into(),
        port: 443,
        verdict: if reason.is_some() {
            ConnectionVerdict::Refused
        } else {
            ConnectionVerdict::Allowed
        },
        reason: reason.map(str::to_owned),
        bytes_up: 1200,
        bytes_down: 48_000,
        started_at: at,
        duration_ms: 35,
    };
    let hostile = "<script>alert('host')</script>\u{1b}[2J.example";
    let long = format!("{}.example", "x".repeat(1_000));
    gh.db
        .store
        .record_connections(&[
            row("github.com", None),
            row(hostile, Some("<b>not</b> in the egress allow-list")),
            row(&long, Some("not in the egress allow-list")),
        ])
        .await
        .unwrap();

    let token = gh.stored_token("ana", &[Scope::Read], None).await;
    let detail = gh.api_as(&token).get(&format!("/runs/{run}")).await.is(200);
    let draft = detail["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["node"] == "draft")
        .unwrap();
    assert_eq!(
        draft["connections"][0],
        json!({
            "host": "github.com", "port": 443, "verdict": "allowed", "reason": null,
            "bytes_up": 1200, "bytes_down": 48000,
            "started_at": draft["connections"][0]["started_at"], "duration_ms": 35,
        })
    );
    assert_eq!(draft["connections"][1]["host"], hostile);
    assert_eq!(draft["connections"][1]["verdict"], "refused");
    assert!(draft["connections"][2]["host"].as_str().unwrap().len() <= 300);
    let check = detail["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["node"] != "draft");
    assert!(
        check.is_none_or(|a| a["connections"] == json!([])),
        "{detail:#}"
    );

    let mut ana = gh.signed_in("ana").await;
    let page = ana.get(&format!("/runs/{run}")).await.expect_status(200);
    for expected in [
        "id=\"network-h\">Network<",
        "3 connections through the egress proxy, 2 refused",
        "&lt;script&gt;alert('host')&lt;/script&gt; [2J.example",
        "&lt;b&gt;not&lt;/b&gt; in the egress allow-list",
        "<td>draft #1</td>",
    ] {
        assert!(
            page.contains(expected),
            "the run page lacks {expected}:\n{}",
            page.html
        );
    }
    assert!(!page.contains("<script>alert('host')"), "{}", page.html);
    assert!(!page.contains("\u{1b}"), "{}", page.html);
    let refused = page.html.find("<tr class=\"refused\">").unwrap();
    let allowed = page.html.find("<tr class=\"allowed\">").unwrap();
    assert!(refused < allowed, "refused first: {}", page.html);
    gh.stop().await;
}

async fn long_output_is_paged_never_loaded_whole(backend: Backend) {
    let gh = start(backend).await;
    let run = gh.request("chatty").await;
    gh.wait_run(run, "succeeded").await;
    let mut ana = gh.signed_in("ana").await;
    let page = ana.get(&format!("/runs/{run}")).await.expect_status(200);
    let shown = page.html.matches("class=\"line\"").count();
    assert_eq!(shown, 200, "the run page shows the end of the output");
    assert!(page.contains("line 2499") && !page.contains("line 2299\n"));
    let end = ana
        .get(&format!("/runs/{run}/logs"))
        .await
        .expect_status(200);
    assert_eq!(end.html.matches("class=\"line\"").count(), 1000);
    assert!(end.contains("line 2499") && end.contains("rel=\"prev\""));
    let first = ana
        .get(&format!("/runs/{run}/logs?after=0"))
        .await
        .expect_status(200);
    assert_eq!(first.html.matches("class=\"line\"").count(), 1000);
    assert!(first.contains("</span>line 0\n") && first.contains("rel=\"next\""));
    // The next page goes on exactly where this one stopped.
    let last: u32 = first
        .html
        .rsplit("</span>line ")
        .next()
        .and_then(|rest| rest.split('\n').next())
        .and_then(|n| n.parse().ok())
        .expect("the page ends with a numbered line");
    let before_next = first.html.split("\" rel=\"next\"").next().unwrap();
    let next = before_next.rsplit("href=\"").next().unwrap();
    let second = ana.get(next).await.expect_status(200);
    assert!(
        second.contains(&format!("</span>line {}\n", last + 1)),
        "{}",
        second.html
    );
    assert!(!second.contains(&format!("</span>line {last}\n")));
    gh.stop().await;
}

async fn requirements_and_graphs_are_served(backend: Backend) {
    let gh = start(backend).await;
    let admin = gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    let started = gh
        .api_as(&admin)
        .post("/runs", json!({ "sop": "review" }))
        .await
        .is(202);
    let run: Uuid = started["run_id"].as_str().unwrap().parse().unwrap();
    gh.node(run, "check", "waiting_approval", 1).await;
    // The graph as a file, from the API (with a token) and from the console.
    let reply = gh
        .api_as(&admin)
        .get(&format!("/runs/{run}/graph.svg"))
        .await;
    assert_eq!(reply.status, 200);
    assert!(
        reply.text.starts_with("<svg") && reply.text.contains("waiting"),
        "{}",
        reply.text
    );
    gh.anonymous()
        .get(&format!("/runs/{run}/graph.svg"))
        .await
        .refused(401, "missing bearer token");
    let mut ana = gh.signed_in("ana").await;
    let svg = ana
        .get(&format!("/runs/{run}/graph.svg"))
        .await
        .expect_status(200);
    assert_eq!(svg.headers["content-type"], "image/svg+xml; charset=utf-8");
    let list = ana.get("/requirements").await.expect_status(200);
    let runs = ana.get("/runs").await.expect_status(200);
    assert!(runs.contains(&run.to_string()[..8]), "{}", runs.html);
    // A run without an issue or project has no requirement; the list still renders.
    assert!(list.contains("Requirements"));
    ana.get(&format!("/requirements/{}", Uuid::now_v7()))
        .await
        .expect_status(404);
    ana.get(&format!("/runs/{}", Uuid::now_v7()))
        .await
        .expect_status(404);
    gh.stop().await;
}

async fn is_paused(gh: &Gatehouse, schedule: &str) -> bool {
    let row = gh.db.store.schedule(schedule).await.unwrap();
    row.expect("the schedule exists").paused
}

async fn sops_schedules_and_reports_have_pages(backend: Backend) {
    let gh = start(backend).await;
    let admin = gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    let run = waiting_review(&gh).await;
    gh.api_as(&admin)
        .post(
            "/schedules",
            json!({ "name": "nightly", "cron": "0 3 * * *", "sop": "review" }),
        )
        .await
        .is(201);
    let mut ana = gh.signed_in("ana").await;

    // SOPs: the list, the graph, the versions runs used, the source (escaped).
    let sops = ana.get("/sops").await.expect_status(200);
    assert!(sops.contains("href=\"/sops/review\""), "{}", sops.html);
    let review = ana.get("/sops/review").await.expect_status(200);
    assert!(
        review.contains("<svg") && review.contains("(loaded now)"),
        "{}",
        review.html
    );
    assert!(review.contains("Review &lt;b&gt;this&lt;/b&gt; &amp; ship"));
    assert!(!review.contains("<b>this</b>"));
    let version = gh.db.store.run(run).await.unwrap().unwrap().sop_version;
    let old = ana
        .get(&format!(
            "/sops/review?version={}",
            version.replace(':', "%3A")
        ))
        .await
        .expect_status(200);
    assert!(old.contains(&version));
    ana.get("/sops/review?version=sha256%3Anope")
        .await
        .expect_status(404);
    ana.get("/sops/nope").await.expect_status(404);
    let svg = ana.get("/sops/review/graph.svg").await.expect_status(200);
    assert!(svg.html.starts_with("<svg"));

    // Schedules: next fires, pause with a note, resume, trigger now.
    let list = ana.get("/schedules").await.expect_status(200);
    assert!(list.contains("href=\"/schedules/nightly\"") && list.contains("0 3 * * *"));
    let action = "/schedules/nightly/command";
    let page = ana
        .submit(
            "/schedules/nightly",
            action,
            &[
                ("command", "pause"),
                ("note", "<i>freeze</i> week"),
                ("next", "/schedules/nightly"),
            ],
        )
        .await
        .expect_status(303);
    assert_eq!(page.location(), "/schedules/nightly?done=paused");
    let paused = ana.get("/schedules/nightly").await.expect_status(200);
    assert!(
        paused.contains("&lt;i&gt;freeze&lt;/i&gt; week"),
        "{}",
        paused.html
    );
    assert!(is_paused(&gh, "nightly").await);
    ana.submit("/schedules/nightly", action, &[("command", "resume")])
        .await
        .expect_status(303);
    assert!(!is_paused(&gh, "nightly").await);
    ana.submit("/schedules/nightly", action, &[("command", "trigger")])
        .await
        .expect_status(303);
    gh.until_run(|r| r.schedule.as_deref() == Some("nightly"))
        .await;
    // Without the `run` scope: no buttons, and the form is refused.
    let read = gh.stored_token("ana", &[Scope::Read], None).await;
    let mut reader = gh.browser();
    reader
        .sign_in(&gh.login_link(&read, "ana").await)
        .await
        .expect_status(303);
    let page = reader.get("/schedules").await.expect_status(200);
    assert!(!page.contains("Trigger now"));
    reader
        .submit("/schedules", action, &[("command", "trigger")])
        .await
        .expect_status(403);

    // Reports: six charts (cost by model and gates' waiting beside the four by person),
    // one caption each, the totals, the CSV; a grouping that does not exist is 422.
    let report = ana
        .get("/reports?by=person&since=7d")
        .await
        .expect_status(200);
    assert_eq!(report.html.matches("<svg").count(), 6, "{}", report.html);
    assert_eq!(report.html.matches("<figcaption>").count(), 6);
    for caption in [
        "Runs started by person per day",
        "Cost by model per day",
        "Mean time gates waited for a decision by person per day",
    ] {
        // Once as the caption, once as the picture's title; never drawn in it again.
        assert_eq!(
            report.html.matches(caption).count(),
            2,
            "{caption}: {}",
            report.html
        );
    }
    assert!(report.contains("<td>bob</td>"), "{}", report.html);
    let by_project = ana
        .get("/reports?by=project&since=7d")
        .await
        .expect_status(200);
    assert!(
        by_project.contains("<td>no project</td>") && !by_project.contains("<td>-</td>"),
        "{}",
        by_project.html
    );
    // The run has not finished: no day has a mean duration, and no line drops to zero.
    let csv = ana
        .get("/reports.csv?by=person&since=7d")
        .await
        .expect_status(200);
    assert!(csv.html.contains(",bob,1,,0,"), "{}", csv.html);
    let csv = ana
        .get("/reports.csv?by=person&since=7d")
        .await
        .expect_status(200);
    assert_eq!(csv.headers["content-type"], "text/csv; charset=utf-8");
    assert!(
        csv.html
            .starts_with("day,person,runs,mean_duration_s,tokens,cost_usd\n")
    );
    assert!(csv.html.contains(",bob,"), "{}", csv.html);
    ana.get("/reports?by=repository").await.expect_status(422);
    gh.stop().await;
}

async fn github_signs_in_the_person_whose_login_it_is(backend: Backend) {
    let mut ana = person("ana", &["leads"]);
    ana.github = Some("ana-gh".into());
    let gh = Gatehouse::builder(backend)
        .people(vec![ana, person("cy", &[])])
        .github_sign_in()
        .start()
        .await;
    let mut browser = gh.browser();
    let signin = browser.get("/signin").await.expect_status(200);
    assert!(signin.contains("Sign in with GitHub"), "{}", signin.html);

    // Off to GitHub, back with a code, signed in as the person with that login.
    let callback = |page: &gatehouse_tests::gatehouse::console::Page| {
        page.location()
            .strip_prefix(gatehouse_tests::gatehouse::CONSOLE_PUBLIC_URL)
            .expect("GitHub sends people back to the console's public address")
            .to_owned()
    };
    let to_github = browser
        .get("/auth/github?next=%2Frequirements")
        .await
        .expect_status(303);
    assert!(
        to_github
            .location()
            .starts_with(&format!("{}/login/oauth/authorize?", gh.github.url))
    );
    gh.github.authorizes_as("ana-gh");
    let back = browser.visit(to_github.location()).await;
    assert_eq!(back.status, 302, "{}", back.html);
    let path = callback(&back);
    // Another browser cannot use this answer: the state is bound to the one that started.
    let mut other = gh.browser();
    other.get(&path).await.expect_status(403);
    let page = browser.get(&path).await.expect_status(303);
    assert_eq!(page.location(), "/requirements");
    assert!(browser.cookie.is_some());
    let inbox = browser.get("/").await.expect_status(200);
    assert!(
        inbox.contains("Signed in as <strong>ana</strong>"),
        "{}",
        inbox.html
    );
    // The same answer again is refused: the state is used.
    let mut replay = gh.browser();
    replay.others = browser.others.clone();
    replay.others.insert(
        "gatehouse_oauth".into(),
        path.split("state=").nth(1).unwrap().into(),
    );
    replay.get(&path).await.expect_status(410);

    // A GitHub account Gatehouse does not know signs nobody in.
    let mut stranger = gh.browser();
    let to_github = stranger.get("/auth/github").await.expect_status(303);
    gh.github.authorizes_as("mallory-gh");
    let back = stranger.visit(to_github.location()).await;
    let page = stranger.get(&callback(&back)).await.expect_status(403);
    assert!(
        page.contains("`mallory-gh` is not one of the people"),
        "{}",
        page.html
    );
    assert!(stranger.cookie.is_none());
    // A forged code is refused by GitHub, and so by Gatehouse.
    let mut forger = gh.browser();
    let to_github = forger.get("/auth/github").await.expect_status(303);
    let state = to_github
        .location()
        .split("state=")
        .nth(1)
        .unwrap()
        .split('&')
        .next()
        .unwrap()
        .to_owned();
    forger
        .get(&format!("/auth/github/callback?code=forged&state={state}"))
        .await
        .expect_status(403);
    assert!(forger.cookie.is_none());
    gh.stop().await;

    // Without an OAuth App there is no GitHub sign-in.
    let plain = start(backend).await;
    let mut browser = plain.browser();
    let signin = browser.get("/signin").await.expect_status(200);
    assert!(!signin.contains("Sign in with GitHub"));
    browser.get("/auth/github").await.expect_status(404);
    plain.stop().await;
}

/// The budgets a run's requests counted against come on its page as in its API view: spent
/// beside each limit, the share used, whether reached; labels escaped.
async fn a_runs_budgets_are_on_its_page_beside_their_limits(backend: Backend) {
    let gh = start(backend).await;
    let run = waiting_review(&gh).await;
    let store = &gh.db.store;
    let attempt = SpendLimit {
        scope: format!("attempt:{run}:draft:1"),
        label: "role <b>coder</b>".into(),
        period: "for this attempt".into(),
        tokens: Some(1_500),
        usd_micros: None,
    };
    let own = SpendLimit {
        scope: format!("run:{run}"),
        label: "SOP review".into(),
        period: "for this run".into(),
        tokens: None,
        usd_micros: Some(20_000_000),
    };
    let limits = [attempt, own];
    store.admit_spend("h1", &limits, 0, 60_000).await.unwrap();
    store
        .charge_spend("h1", &limits, 2_000, 16_100_000, 10)
        .await
        .unwrap();

    let mut ana = gh.signed_in("ana").await;
    let page = ana.get(&format!("/runs/{run}")).await.expect_status(200);
    for expected in [
        "id=\"budgets-h\">Budgets<",
        "2 budgets, 1 reached",
        "<tr class=\"reached\"><td>role &lt;b&gt;coder&lt;/b&gt; · draft #1 · for this attempt</td>\
         <td>1.5k tokens</td><td>2k tokens · 1 request</td><td>133%</td><td><strong>reached</strong></td>",
        "<tr class=\"close\"><td>SOP review · for this run</td><td>$20.00</td>\
         <td>$16.10 · 1 request</td><td>80%</td><td>no</td>",
    ] {
        assert!(
            page.contains(expected),
            "the run page lacks {expected}:\n{}",
            page.html
        );
    }
    assert!(!page.contains("<b>coder"), "{}", page.html);
    gh.stop().await;
}

async fn an_sop_page_starts_a_run_with_typed_parameters(backend: Backend) {
    let gh = start(backend).await;
    let mut ana = gh.signed_in("ana").await;
    let page = ana.get("/sops/typed").await.expect_status(200);
    // One input per parameter, by its type, defaults filled in.
    for expected in [
        r#"<input id="param-count" name="param.count" type="number" step="1" inputmode="numeric" value="3">"#,
        r#"<select id="param-dry" name="param.dry">"#,
        r#"<option value="false" selected>false</option>"#,
        r#"<select id="param-tier" name="param.tier" required>"#,
        r#"<option value="large">large</option>"#,
        r#"<input id="param-tag" name="param.tag" type="text">"#,
        r#"<option value="web">web</option>"#,
        "How many.",
    ] {
        assert!(page.contains(expected), "no {expected}:\n{}", page.html);
    }
    let form = [
        ("param.count", "x"),
        ("param.dry", "true"),
        ("param.tier", "large"),
        ("param.tag", ""),
        ("project", "web"),
    ];
    // A value its type refuses: the API's own check, shown in the form with what was typed.
    let refused = ana
        .submit("/sops/typed", "/sops/typed/start", &form)
        .await
        .expect_status(422);
    assert!(
        refused.contains("parameter `count` must be an integer, got `x`")
            && refused.contains(r#"id="start-error""#)
            && refused.contains(r#"value="x""#)
            && refused.contains(r#"<option value="true" selected>true</option>"#),
        "{}",
        refused.html
    );
    assert!(
        gh.db
            .store
            .runs(None, &[], 10)
            .await
            .unwrap()
            .iter()
            .all(|r| r.sop != "typed")
    );
    // A project that does not exist is the API's refusal too.
    let mut bad = form;
    bad[0] = ("param.count", "4");
    bad[4] = ("project", "nope");
    let refused = ana
        .submit("/sops/typed", "/sops/typed/start", &bad)
        .await
        .expect_status(422);
    assert!(refused.contains("nope"), "{}", refused.html);
    // Fixed, it starts the run on the project, with the typed values and the defaults.
    let mut good = form;
    good[0] = ("param.count", "4");
    let started = ana
        .submit("/sops/typed", "/sops/typed/start", &good)
        .await
        .expect_status(303);
    let to = started.location().to_owned();
    assert!(
        to.starts_with("/runs/") && to.ends_with("?done=started"),
        "{to}"
    );
    let run: Uuid = to["/runs/".len()..to.len() - "?done=started".len()]
        .parse()
        .unwrap();
    gh.wait_run(run, "succeeded").await;
    let row = gh.db.store.run(run).await.unwrap().unwrap();
    assert_eq!(row.project.as_deref(), Some("web"));
    assert_eq!(row.requested_by.as_deref(), Some("ana"));
    let params: serde_json::Value = serde_json::from_str(&row.params).unwrap();
    assert_eq!(params["count"], "4");
    assert_eq!(params["tier"], "large");
    assert_eq!(params["dry"], "true");
    assert!(
        params.get("tag").is_none(),
        "an empty field is not a value: {params}"
    );
    // Without this session's token, or without the `run` scope, nothing starts.
    ana.post("/sops/typed/start", &good)
        .await
        .expect_status(403);
    let read = gh.stored_token("ana", &[Scope::Read], None).await;
    let mut reader = gh.browser();
    reader
        .sign_in(&gh.login_link(&read, "ana").await)
        .await
        .expect_status(303);
    let page = reader.get("/sops/typed").await.expect_status(200);
    assert!(!page.contains("Start a run"), "{}", page.html);
    reader
        .submit("/sops", "/sops/typed/start", &good)
        .await
        .expect_status(403);
    let typed = gh.db.store.runs(None, &[], 10).await.unwrap();
    assert_eq!(typed.iter().filter(|r| r.sop == "typed").count(), 1);
    gh.stop().await;
}

async fn the_runs_list_and_run_page_say_who_what_and_how_long(backend: Backend) {
    let gh = start(backend).await;
    let admin = gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    // A run on the project (its own requirement), one of no project that prints nothing
    // (no checkout either), and one waiting.
    let start = |project: Option<&str>| {
        let mut body = json!({ "sop": "typed", "params": { "tier": "small" } });
        if let Some(p) = project {
            body["project"] = json!(p);
        }
        body
    };
    let started = gh
        .api_as(&admin)
        .post("/runs", start(Some("web")))
        .await
        .is(202);
    let onweb: Uuid = started["run_id"].as_str().unwrap().parse().unwrap();
    let started = gh.api_as(&admin).post("/runs", start(None)).await.is(202);
    let quiet: Uuid = started["run_id"].as_str().unwrap().parse().unwrap();
    gh.wait_run(onweb, "succeeded").await;
    gh.wait_run(quiet, "succeeded").await;
    let review = waiting_review(&gh).await;
    let requirement = gh
        .db
        .store
        .run(onweb)
        .await
        .unwrap()
        .unwrap()
        .requirement_id
        .expect("a run on a project works on a requirement");
    let mut ana = gh.signed_in("ana").await;
    let list = ana.get("/runs").await.expect_status(200);
    for expected in [
        // Titles, escaped, linking to the runs.
        format!(r#"<a class="title" href="/runs/{onweb}">Typed parameters</a>"#),
        format!(r#"<a class="title" href="/runs/{quiet}">Typed parameters</a>"#),
        format!(
            r#"<a class="title" href="/runs/{review}">Review &lt;b&gt;this&lt;/b&gt; &amp; ship</a>"#
        ),
        // The requirement, by its title; none for the review run.
        format!(r#"<a href="/requirements/{requirement}">typed on web</a>"#),
        r#"<span class="empty">none</span>"#.to_owned(),
        // Who started each, and how long it took or has been going.
        format!("<td>{BOOTSTRAP_ADMIN}</td>"),
        "<td>bob</td>".to_owned(),
        r#"<span class="empty">no project</span>"#.to_owned(),
        " so far</td>".to_owned(),
    ] {
        assert!(list.contains(&expected), "no {expected}:\n{}", list.html);
    }
    // The run page: its whole duration, and "no output" instead of an empty box.
    let page = ana.get(&format!("/runs/{quiet}")).await.expect_status(200);
    assert!(page.contains("<dt>Duration</dt>"), "{}", page.html);
    assert!(
        page.contains(r#"<p class="empty no-output">No output.</p>"#),
        "{}",
        page.html
    );
    // A gate's box in the graph lists its decisions, and its section who decided what.
    ana.submit(
        "/",
        &format!("/runs/{review}/gates/check/decide"),
        &[
            ("decision", "send_back"),
            ("to", "draft"),
            ("attempt", "1"),
            ("comment", "say why"),
        ],
    )
    .await
    .expect_status(303);
    gh.node(review, "check", "waiting_approval", 2).await;
    let page = ana.get(&format!("/runs/{review}")).await.expect_status(200);
    assert!(
        page.contains(r#"class="gh-node-decision""#) && page.contains(">sent back by ana</text>"),
        "{}",
        page.html
    );
    assert!(
        page.contains(r#"aria-label="Decisions at check""#),
        "{}",
        page.html
    );
    assert!(!page.contains("no-output"), "the draft printed");
    let svg = gh
        .api_as(&admin)
        .get(&format!("/runs/{review}/graph.svg"))
        .await;
    assert!(
        svg.text.contains(">sent back by ana</text>"),
        "{}",
        svg.text
    );
    gh.stop().await;
}
