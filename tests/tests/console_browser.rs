//! The console in a real browser: headless Chromium, driven over WebDriver (ChromeDriver)
//! with `fantoccini`, on Postgres and on SQLite.
//!
//! A lead signs in with a one-time link (pressing "Sign in as ana"), finds the gate in the
//! inbox and sends the draft back with a comment; on the run page — without reloading it,
//! which the test proves with a marker set on `window` — the draft's second attempt shows
//! running and then succeeded, its output line with the comment arrives in the log, the run
//! head turns to waiting and the decision form for the reopened gate appears, all from
//! `live.js` following the server-sent events. The lead approves in that form (a normal
//! form post: the page reloads once, as it does without JavaScript), and the run head then
//! turns to succeeded live. Along the way: the page's basic accessibility facts (`main`, a
//! skip link, the graph's SVG as an image with a title) and no script error or
//! Content-Security-Policy violation in the page.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (Debian's `chromium` and
//! `chromium-driver`). Without them the test says so and passes, unless
//! `BROWSER_TESTS=required` (CI, `.ci/run`), where that is a failure. The test starts its
//! own ChromeDriver on a free loopback port and ends it (and its browser) afterwards.
//!
//! A screenshot of the finished run page goes to `target/ci-artifacts/console-run.png`
//! (`console-run-postgres.png` for the Postgres run) under the workspace root.
//!
//! A second test visits each main page (inbox, runs, run, requirement, reports, SOP,
//! schedules, deliveries) at a wide screen's 1400 px and a phone's 390 px, checks that the
//! page itself never scrolls sideways (wide tables and graphs scroll in their own box)
//! and that no script error or policy violation happens, and keeps a screenshot of each
//! as `target/ci-artifacts/console-<page>-<width>.png` (`-postgres` added on Postgres).

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use gatehouse_events::GateDecisionKind;
use gatehouse_ingest::{BOOTSTRAP_ADMIN, Scope};
use gatehouse_tests::{Backend, Gatehouse, on_both_backends, person};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

on_both_backends!(
    a_lead_sends_back_and_approves_in_a_browser,
    every_page_fits_a_wide_screen_and_a_phone
);

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long the page may take to show what the run did.
const PATIENCE: Duration = Duration::from_secs(20);

/// A draft whose second attempt runs until the test lets it go on (so the browser, with
/// the run page open, watches it run) and prints its rework comment, a gate leads decide
/// that may send it back, and a last step that also waits for the test, so the page that
/// comes back after approving sees the run end live. `{GO}` is a directory of the test's:
/// a step waits for its file there (thirty seconds at most).
const REVIEW: &str = r#"name: review
title: "Review the draft"
nodes:
  draft:
    kind: script
    run: |
      echo "draft attempt $GATEHOUSE_ATTEMPT starts"
      if [ "$GATEHOUSE_ATTEMPT" = 2 ]; then
        i=0; while [ ! -e '{GO}/draft' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
      fi
      echo "draft attempt $GATEHOUSE_ATTEMPT: ${GATEHOUSE_REWORK_COMMENT:-no comment}"
      printf '# Draft\n\nattempt %s: %s\n' "$GATEHOUSE_ATTEMPT" "$GATEHOUSE_REWORK_COMMENT" > "$GATEHOUSE_ARTIFACTS/draft.md"
    artifacts: [draft.md]
  check: { kind: gate, needs: [draft], approvers: [group:leads], send_back: [draft] }
  after:
    kind: script
    needs: [check]
    run: |
      i=0; while [ ! -e '{GO}/after' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
      echo shipped
"#;

const COMMENT: &str = "Add the rollback plan & cite INC-7";

async fn a_lead_sends_back_and_approves_in_a_browser(backend: Backend) {
    let Some(driver) = ChromeDriver::start() else {
        return;
    };
    let go = tempfile::tempdir().unwrap();
    let review = REVIEW.replace("{GO}", &go.path().display().to_string());
    let release = |step: &str| std::fs::write(go.path().join(step), "").unwrap();
    let gh = Gatehouse::builder(backend)
        .sops(&[("review", &review)])
        .people(vec![person("ana", &["leads"]), person("bob", &[])])
        .start()
        .await;
    let run = gh.request("review").await;
    gh.node(run, "check", "waiting_approval", 1).await;
    // An administrator asks for ana's link, so her session has a person's usual rights.
    let admin = gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    let link = gh.login_link(&admin, "ana").await;
    let browser = driver.browser().await;
    let b = &browser.client;

    // The link shows a button; pressing it signs in and lands on the inbox.
    b.goto(&format!("{}{link}", gh.url)).await.unwrap();
    let button = b
        .find(Locator::Css("form[action='/login'] button[type=submit]"))
        .await
        .unwrap();
    assert_eq!(button.text().await.unwrap(), "Sign in as ana");
    button.click().await.unwrap();
    eventually(
        b,
        "the inbox after signing in",
        "return location.pathname === '/' && document.querySelector('h1')?.textContent",
    )
    .await;
    let waiting = b.find(Locator::Id("waiting")).await.unwrap();
    assert_eq!(waiting.text().await.unwrap(), "Waiting for you (1)");

    // The gate's card: a comment, the node to send back to, and the button.
    let card = b.find(Locator::Css("article.gate")).await.unwrap();
    assert!(
        card.text().await.unwrap().contains("Review the draft"),
        "{}",
        card.html(false).await.unwrap()
    );
    card.find(Locator::Css("textarea[name=comment]"))
        .await
        .unwrap()
        .send_keys(COMMENT)
        .await
        .unwrap();
    card.find(Locator::Css("select[name=to]"))
        .await
        .unwrap()
        .select_by_value("draft")
        .await
        .unwrap();
    card.find(Locator::Css("button[name=decision][value=send_back]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let notice = eventually(
        b,
        "the inbox saying the draft was sent back",
        "return location.search === '?done=sent_back' && document.querySelector('p.notice')?.textContent",
    )
    .await;
    assert!(
        notice.as_str().unwrap().starts_with("Sent back"),
        "{notice}"
    );

    // The run page, followed live: nothing below reloads it.
    b.goto(&format!("{}/runs/{run}", gh.url)).await.unwrap();
    accessible(b).await;
    let live = b
        .find(Locator::Css("[data-live]"))
        .await
        .unwrap()
        .attr("data-live")
        .await
        .unwrap()
        .unwrap_or_default();
    assert!(live.starts_with(&format!("/runs/{run}/events")), "{live}");
    stay(b, 1).await;

    eventually(
        b,
        "the draft's second attempt running",
        "const n = document.getElementById('node-draft');
         return n.querySelector('h3 .status').textContent === 'running'
             && n.querySelector('p.meta').textContent.startsWith('attempt 2')",
    )
    .await;
    // Output arrives while the step runs, not only when it ends.
    eventually(
        b,
        "the draft's first line of its second attempt, while it runs",
        "return document.getElementById('log').textContent.includes('[draft#2] draft attempt 2 starts')
            && document.querySelector('#node-draft h3 .status').textContent === 'running'",
    )
    .await;
    release("draft");
    eventually(
        b,
        "the draft's second attempt succeeded",
        "const n = document.getElementById('node-draft');
         return n.querySelector('h3 .status').textContent === 'succeeded'
             && n.querySelector('p.meta').textContent.startsWith('attempt 2')
             && n.querySelectorAll('table.attempts tbody tr').length === 2",
    )
    .await;
    let line = format!("[draft#2] draft attempt 2: {COMMENT}");
    eventually(
        b,
        "the draft's line with the comment in the output",
        &format!(
            "return document.getElementById('log').textContent.includes({})",
            json!(line)
        ),
    )
    .await;
    eventually(
        b,
        "the run head saying waiting",
        "return document.querySelector('#run-head h1 .status').textContent === 'waiting'",
    )
    .await;
    eventually(
        b,
        "the decision form for the reopened gate",
        "const d = document.getElementById('decide');
         return d.getAttribute('data-key') === 'check#2'
             && d.querySelector('h3')?.textContent === 'Gate check, attempt 2'
             && !!d.querySelector('form.decision button[value=approve]')",
    )
    .await;
    stayed(b, 1).await;

    // Approving is a form post: the page comes back once, then follows the run again.
    let decide = b.find(Locator::Css("#decide form.decision")).await.unwrap();
    decide
        .find(Locator::Css("textarea[name=comment]"))
        .await
        .unwrap()
        .send_keys("Good now")
        .await
        .unwrap();
    decide
        .find(Locator::Css("button[name=decision][value=approve]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually(
        b,
        "the run page saying the gate was approved",
        "return location.search === '?done=approved' && document.querySelector('p.notice')?.textContent.startsWith('Approved')",
    )
    .await;
    let at_load = b
        .execute(
            "return document.querySelector('#run-head h1 .status').textContent",
            vec![],
        )
        .await
        .unwrap();
    assert_ne!(at_load, "succeeded", "the last step waits for the test");
    stay(b, 2).await;
    release("after");
    eventually(
        b,
        "the run head saying succeeded",
        "return document.querySelector('#run-head h1 .status').textContent === 'succeeded'
            && document.querySelector('#node-after h3 .status').textContent === 'succeeded'
            && document.getElementById('log').textContent.includes('[after#1] shipped')",
    )
    .await;
    stayed(b, 2).await;
    gh.wait_run(run, "succeeded").await;
    // The audit trail, swapped in live, has both decisions.
    eventually(
        b,
        "both decisions in the audit trail",
        &format!(
            "const rows = [...document.querySelectorAll('#audit tbody tr')].map(r => r.textContent);
             return rows.length === 2
                 && rows.some(r => r.includes('send back to draft') && r.includes({}))
                 && rows.some(r => r.includes('approve') && r.includes('Good now'))",
            json!(COMMENT)
        ),
    )
    .await;

    b.execute("window.scrollTo(0, 0)", vec![]).await.unwrap();
    let png = b.screenshot().await.unwrap();
    let name = match backend {
        Backend::Sqlite => "console-run.png",
        Backend::Postgres => "console-run-postgres.png",
    };
    let path = artifacts_dir().join(name);
    std::fs::write(&path, png).unwrap();
    println!("screenshot of the run page: {}", path.display());

    browser.close().await;
    drop(driver);
    gh.stop().await;
}

/// A project anyone may run on, so a run can have a requirement.
const PROJECTS: &str = r#"
[[projects]]
name = "web"
repositories = [{ repo = "acme/web" }]
"#;

/// The widths every page is checked at: a wide screen and a phone.
const WIDTHS: [u32; 2] = [1400, 390];

async fn every_page_fits_a_wide_screen_and_a_phone(backend: Backend) {
    let Some(driver) = ChromeDriver::start() else {
        return;
    };
    let go = tempfile::tempdir().unwrap();
    // Nothing waits here: the draft goes straight on to the gate.
    std::fs::write(go.path().join("draft"), "").unwrap();
    std::fs::write(go.path().join("after"), "").unwrap();
    let review = REVIEW.replace("{GO}", &go.path().display().to_string());
    let gh = Gatehouse::builder(backend)
        .sops(&[("review", &review)])
        .projects(PROJECTS)
        .people(vec![person("ana", &["leads"]), person("bob", &[])])
        .start()
        .await;
    let admin = gh.stored_token(BOOTSTRAP_ADMIN, &Scope::ALL, None).await;
    // A run on the project (with its requirement) waiting at its gate, a finished one of
    // no project, and a schedule.
    let started = gh
        .api_as(&admin)
        .post("/runs", json!({ "sop": "review", "project": "web" }))
        .await
        .is(202);
    let run: uuid::Uuid = started["run_id"].as_str().unwrap().parse().unwrap();
    gh.node(run, "check", "waiting_approval", 1).await;
    let other = gh.request("review").await;
    gh.node(other, "check", "waiting_approval", 1).await;
    gh.decide(other, "check", 1, GateDecisionKind::Approve, None)
        .await;
    gh.wait_run(other, "succeeded").await;
    gh.api_as(&admin)
        .post(
            "/schedules",
            json!({ "name": "nightly-review-of-everything", "cron": "0 3 * * *", "sop": "review" }),
        )
        .await
        .is(201);
    let requirement = gh
        .db
        .store
        .run(run)
        .await
        .unwrap()
        .unwrap()
        .requirement_id
        .expect("a run on a project has a requirement");
    let pages = [
        ("inbox", "/".to_owned()),
        ("runs", "/runs".to_owned()),
        ("run", format!("/runs/{run}")),
        ("requirement", format!("/requirements/{requirement}")),
        ("reports", "/reports?by=sop&since=7d".to_owned()),
        ("sop", "/sops/review".to_owned()),
        ("schedules", "/schedules".to_owned()),
        ("deliveries", "/deliveries".to_owned()),
    ];
    let link = gh.login_link(&admin, "ana").await;
    let browser = driver.browser().await;
    let b = &browser.client;
    b.goto(&format!("{}{link}", gh.url)).await.unwrap();
    b.find(Locator::Css("form[action='/login'] button[type=submit]"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    eventually(
        b,
        "the inbox after signing in",
        "return location.pathname === '/'",
    )
    .await;
    let suffix = match backend {
        Backend::Sqlite => "",
        Backend::Postgres => "-postgres",
    };
    for width in WIDTHS {
        viewport(b, width, 900).await;
        for (name, path) in &pages {
            b.goto(&format!("{}{path}", gh.url)).await.unwrap();
            stay(b, 3).await;
            let facts = b
                .execute(
                    "return {
                       path: location.pathname,
                       h1: document.querySelector('main h1')?.textContent ?? null,
                       alert: document.querySelector('main p.error[role=alert]')?.textContent ?? null,
                       inner: window.innerWidth,
                       scroll: document.documentElement.scrollWidth,
                       wide: [...document.querySelectorAll('main *')]
                         .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                           && !e.closest('table, .graph, .scroll, pre, svg'))
                         .slice(0, 5)
                         .map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right)),
                     };",
                    vec![],
                )
                .await
                .unwrap();
            let context = format!("{name} at {width} px: {facts}");
            assert_eq!(facts["inner"], json!(width), "{context}");
            assert!(
                facts["h1"].as_str().is_some_and(|h| !h.is_empty()) && facts["alert"].is_null(),
                "not the page itself: {context}"
            );
            assert!(
                facts["scroll"].as_u64() <= facts["inner"].as_u64(),
                "the page scrolls sideways: {context}"
            );
            stayed(b, 3).await;
            let png = b.screenshot().await.unwrap();
            let path = artifacts_dir().join(format!("console-{name}-{width}{suffix}.png"));
            std::fs::write(&path, png).unwrap();
        }
    }
    println!("screenshots of every page in {}", artifacts_dir().display());
    browser.close().await;
    drop(driver);
    gh.stop().await;
}

/// Makes the page `width` × `height` CSS pixels, as a phone's screen is for a phone's
/// width (Chromium's own window keeps a minimum width; the emulated screen does not).
async fn viewport(b: &Client, width: u32, height: u32) {
    b.issue_cmd(Cdp {
        cmd: "Emulation.setDeviceMetricsOverride",
        params: json!({
            "width": width,
            "height": height,
            "deviceScaleFactor": 1,
            "mobile": width < 600,
        }),
    })
    .await
    .unwrap();
}

/// A Chrome DevTools Protocol command through ChromeDriver's `goog/cdp/execute`.
#[derive(Debug)]
struct Cdp {
    cmd: &'static str,
    params: Value,
}

impl fantoccini::wd::WebDriverCompatibleCommand for Cdp {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.unwrap_or_default()
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (axum::http::Method, Option<String>) {
        let body = json!({ "cmd": self.cmd, "params": self.params });
        (axum::http::Method::POST, Some(body.to_string()))
    }
}

/// The page's landmarks and the graph as an image with a name.
async fn accessible(b: &Client) {
    let facts = b
        .execute(
            "const svg = document.querySelector('section#graph svg');
             return {
               main: !!document.querySelector('main#main'),
               skip: !!document.querySelector('a[href=\"#main\"]'),
               lang: document.documentElement.lang,
               title: document.title,
               svg_role: svg && svg.getAttribute('role'),
               svg_title: svg && svg.querySelector(':scope > title')?.textContent,
             };",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(facts["main"], true, "{facts}");
    assert_eq!(facts["skip"], true, "{facts}");
    assert_eq!(facts["lang"], "en", "{facts}");
    assert!(
        facts["title"]
            .as_str()
            .unwrap()
            .contains("Review the draft"),
        "{facts}"
    );
    assert_eq!(facts["svg_role"], "img", "{facts}");
    assert!(
        !facts["svg_title"].as_str().unwrap_or_default().is_empty(),
        "{facts}"
    );
}

/// Marks the page as loaded now (`window.__stayed = mark`) and starts noting script errors
/// and Content-Security-Policy violations.
async fn stay(b: &Client, mark: u32) {
    b.execute(
        "window.__stayed = arguments[0];
         window.__problems = [];
         window.addEventListener('error', e => window.__problems.push('error: ' + e.message));
         window.addEventListener('unhandledrejection', e => window.__problems.push('rejection: ' + e.reason));
         document.addEventListener('securitypolicyviolation', e =>
           window.__problems.push('CSP: ' + e.violatedDirective + ' ' + e.blockedURI));",
        vec![json!(mark)],
    )
    .await
    .unwrap();
}

/// Checks that the page marked with `mark` was never reloaded, and that it had no problem.
async fn stayed(b: &Client, mark: u32) {
    let page = b
        .execute(
            "return { stayed: window.__stayed ?? null, problems: window.__problems ?? null }",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(page["stayed"], json!(mark), "the page was reloaded: {page}");
    assert_eq!(page["problems"], json!([]), "{page}");
}

/// Runs `script` until it returns something truthy (that value), for up to [`PATIENCE`].
async fn eventually(b: &Client, what: &str, script: &str) -> Value {
    let start = Instant::now();
    loop {
        let value = b.execute(script, vec![]).await.unwrap();
        let truthy = match &value {
            Value::Null => false,
            Value::Bool(t) => *t,
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            _ => true,
        };
        if truthy {
            return value;
        }
        if start.elapsed() > PATIENCE {
            // What the page shows, beside what the server would show now.
            let pages = b
                .execute(
                    "const parts = d => ['run-head', 'decide', 'nodes', 'log']
                       .map(id => d.getElementById(id)?.textContent.replace(/\\s+/g, ' ').trim())
                       .join('\\n');
                     return fetch(location.pathname)
                       .then(r => r.text())
                       .then(html => ({
                         shown: parts(document),
                         served: parts(new DOMParser().parseFromString(html, 'text/html')),
                       }));",
                    vec![],
                )
                .await
                .unwrap_or_default();
            panic!(
                "timed out after {PATIENCE:?} waiting for {what}\nthe page shows:\n{}\n\nthe server serves now:\n{}",
                pages["shown"].as_str().unwrap_or_default(),
                pages["served"].as_str().unwrap_or_default(),
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `target/ci-artifacts` in the workspace, made if missing.
fn artifacts_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("ci-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

/// A ChromeDriver of this test's own, ended (with any browser it started) on drop.
struct ChromeDriver {
    child: Child,
    url: String,
}

/// A headless Chromium session with a profile of its own.
struct Browser {
    client: Client,
    _profile: tempfile::TempDir,
}

impl ChromeDriver {
    /// Starts ChromeDriver on a free loopback port and waits until it answers; `None`
    /// (the test skipped) when Chromium or ChromeDriver is missing and CI does not
    /// require them.
    fn start() -> Option<ChromeDriver> {
        let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
            .into_iter()
            .filter(|p| !Path::new(p).exists())
            .collect();
        if !missing.is_empty() {
            assert!(
                std::env::var("BROWSER_TESTS").as_deref() != Ok("required"),
                "BROWSER_TESTS=required but {} is missing (apt-get install chromium chromium-driver)",
                missing.join(" and ")
            );
            eprintln!(
                "skipped: {} is missing (apt-get install chromium chromium-driver)",
                missing.join(" and ")
            );
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            // Its own process group, so that ending it ends the browsers it started.
            .process_group(0)
            .spawn()
            .expect("chromedriver starts");
        let driver = ChromeDriver {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        let start = Instant::now();
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(driver);
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "chromedriver did not answer on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A new headless Chromium.
    async fn browser(&self) -> Browser {
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--window-size=1280,1600".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&self.url)
            .await
            .expect("a Chromium session");
        Browser {
            client,
            _profile: profile,
        }
    }
}

impl Browser {
    /// Ends the session (and the browser).
    async fn close(self) {
        self.client.close().await.unwrap();
    }
}

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        // The whole group: ChromeDriver and any Chromium left behind by a failed test.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
