//! The operator console (`self-evolve ui`) in a real browser (issue 38 item 5): headless Chromium
//! driven through chromedriver (W3C WebDriver, tests/webdriver) against the real `self-evolve ui
//! --no-open --port 0` process, on a home made by the real CLI (a replayed session for the gate's
//! and reviews' records, a skill with two versions, write approval on, three staged writes, one of
//! them held for a credential finding).
//!
//! What a person does goes through the page (clicks, and keys for the keyboard-only approval);
//! scripts only read the page's state. What lands is read on disk and through the CLI. The
//! screenshots (inbox, a diff, the gate's charts, an evaluation, at 1280 and 390 px, light and dark) are left in
//! target/console-screenshots/; `SELF_EVOLVE_BLESS=1` also copies the inbox at 1280 px, light, to
//! docs/img/console-inbox.png (the README's picture).
//!
//! Chromium and chromedriver must be installed (`./build.sh test` installs Debian's `chromium`
//! and `chromium-driver`); without them these tests fail, saying so. Nothing is skipped.

mod console_support;
mod webdriver;

use anyhow::{Context, Result, ensure};
use console_support::*;
use serde_json::json;
use std::time::Duration;
use webdriver::{Driver, Session, key};

/// How long the page may take to show a change (its poll is every 2 s).
const WAIT: Duration = Duration::from_secs(15);

/// The two widths the console must work at, with a window height for each.
const SIZES: [(u32, u32); 2] = [(1280, 900), (390, 844)];

#[path = "console_browser/page.rs"]
mod page;
use page::*;

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

/// The client itself, on a page of its own: every command the console test relies on.
#[test]
fn the_webdriver_client_drives_headless_chromium() -> Result<()> {
    let driver = Driver::start(&artefacts().join("chromedriver-client.log"))?;
    let s = driver.session(1280, 900)?;
    let page = r#"<!doctype html><html><head><style>
        :root { color-scheme: light dark; }
        button:focus-visible { outline: 3px solid rgb(255, 0, 0); }
        @media (prefers-color-scheme: dark) { body { background: rgb(0, 0, 0); } }
        </style></head><body>
        <input data-test="name" value="">
        <button data-test="first" onclick="document.querySelector('[data-test=out]').textContent = 'first clicked'">First</button>
        <button data-test="second" data-id="x&lt;1" onclick="document.querySelector('[data-test=out]').textContent = 'second: ' + document.querySelector('[data-test=name]').value">Second</button>
        <p data-test="out" role="status"></p>
        </body></html>"#;
    let mut url = String::from("data:text/html;charset=utf-8,");
    for byte in page.bytes() {
        match byte.is_ascii_alphanumeric() {
            true => url.push(byte as char),
            false => url.push_str(&format!("%{byte:02X}")),
        }
    }
    s.goto(&url)?;

    s.find("[data-test=name]")?.send_keys("hello <b>")?;
    // Keyboard only: from the input, Tab twice reaches the second button; Enter presses it.
    s.press(&[key::TAB])?;
    ensure!(s.active()?.attr("data-test")?.as_deref() == Some("first"), "Tab moves focus to the first button");
    let f = tab_to(&s, "the second button", |f| f["test"] == "second")?;
    ensure!(focus_is_visible(&f), "focus is visible after Tab: {f}");
    ensure!(s.active()?.attr("data-id")?.as_deref() == Some("x<1"), "attributes are read as values");
    s.press(&[key::ENTER])?;
    let out = s.find("[data-test=out]")?;
    s.wait("the second button's text", WAIT, || Ok((out.text()? == "second: hello <b>").then_some(())))?;
    s.find("[data-test=first]")?.click()?;
    ensure!(out.text()? == "first clicked");
    ensure!(s.find("[data-test=nothing]").is_err_and(|e| webdriver::transient(&e)), "a missing element is an error");
    ensure!(s.find_all("button")?.len() == 2);

    // Script arguments and element references round-trip.
    let tag = s.script("return arguments[0].tagName + arguments[1];", vec![out.arg(), json!("!")])?;
    ensure!(tag == "P!", "{tag}");

    // Window sizes: the viewport is as wide as asked.
    for (width, height) in SIZES {
        s.set_window(width, height)?;
        let inner = s.script("return window.innerWidth;", vec![])?;
        ensure!(inner == width, "window.innerWidth {inner} at {width}");
    }

    // Colour schemes through DevTools, without a reload.
    for (dark, background) in [(true, "rgb(0, 0, 0)"), (false, "rgba(0, 0, 0, 0)")] {
        s.color_scheme(dark)?;
        let seen = s.script(
            "return [matchMedia('(prefers-color-scheme: dark)').matches, getComputedStyle(document.body).backgroundColor];",
            vec![],
        )?;
        ensure!(seen == json!([dark, background]), "dark {dark}: {seen}");
    }

    let shot = artefacts().join("webdriver-self-test.png");
    s.screenshot(&shot)?;
    ensure!(std::fs::metadata(&shot)?.len() > 1000, "a screenshot was written");
    s.quit()?;
    Ok(())
}

/// A person's session with the console: open it with the token, approve from the keyboard,
/// reject, approve a held write only after naming its rule, see the CLI's changes arrive,
/// revert a skill, and read a hostile skill as text; screenshots on the way.
#[test]
fn an_operator_decides_the_inbox_in_a_real_browser() -> Result<()> {
    let home = prepare_home();
    let console = Console::start(&home, "operator");
    let driver = Driver::start(&artefacts().join("chromedriver-operator.log"))?;
    let result = operator_session(&driver, &home, &console);
    if result.is_err() {
        eprintln!("`self-evolve ui` stderr:\n{}", console.stderr());
    }
    result
}

fn operator_session(driver: &Driver, home: &Home, console: &Console) -> Result<()> {
    let (width, height) = SIZES[0];
    let s = driver.session(width, height)?;

    // Without the token the console is closed: it says how to get in.
    s.goto(&format!("{}/", console.base()))?;
    let closed = s.find("body")?.text()?;
    ensure!(closed.contains("self-evolve ui"), "without the token the page says to open the printed link: {closed:?}");
    ensure!(s.find_all("[data-test=pending-row]")?.is_empty());

    // With it: the token is exchanged for an HttpOnly, SameSite=Strict cookie and left out of
    // the address bar. The launch link is opened once in this browser session (a second exchange
    // of the same token may be refused); every later visit goes to console.base().
    s.goto(&console.url)?;
    let ids = wait_rows(&s, "three pending writes", |ids| ids.len() == 3)?;
    let mut sorted = ids.clone();
    sorted.sort();
    ensure!(
        sorted == [home.alpha.clone(), home.beta.clone(), home.held.clone()],
        "the inbox lists the staged writes: {ids:?}"
    );
    let address = s.url()?;
    ensure!(!address.contains(&console.token), "the token stays out of the address bar: {address}");
    // The cookie is named for the console's port (`se_session_PORT`, so two consoles in one
    // browser keep their own), or `se_session` from a console before that change.
    let cookies = s.cookies()?;
    let port_cookie = format!("se_session_{}", console.port);
    let cookie = cookies
        .iter()
        .find(|c| c["name"] == port_cookie.as_str() || c["name"] == "se_session")
        .with_context(|| format!("no {port_cookie} (or se_session) cookie: {cookies:?}"))?;
    ensure!(cookie["httpOnly"] == true && cookie["sameSite"] == "Strict", "the session cookie: {cookie}");
    let held_row = row(&s, &home.held)?.text()?;
    ensure!(
        held_row.contains("api-fixtures") && held_row.contains("the API tests need a fixture"),
        "a row names the skill and why: {held_row:?}"
    );

    // Keyboard only: Tab to alpha's row, Enter shows its diff; Tab to Approve, Enter lands it.
    let f = tab_to(&s, "alpha's row", |f| f["row"] == home.alpha.as_str())?;
    ensure!(focus_is_visible(&f), "the focused row shows its focus: {f}");
    s.press(&[key::ENTER])?;
    wait_text(&s, "[data-test=diff]", "make alpha-restart")?;
    let f = tab_to(&s, "the Approve button", |f| f["test"] == "approve")?;
    ensure!(focus_is_visible(&f), "the focused Approve button shows its focus: {f}");
    s.press(&[key::ENTER])?;
    wait_status(&s, &format!("approved {}", home.alpha))?;
    let landed = std::fs::read_to_string(home.skill_file("alpha-notes")).context("alpha-notes landed")?;
    ensure!(landed.contains("make alpha-restart"), "{landed}");
    wait_rows(&s, "alpha's row gone", |ids| !ids.contains(&home.alpha))?;

    // Screenshots while two writes wait: the inbox, then the held one's diff, then the gate.
    let mut shots = screenshots(&s, "inbox", "[data-test=pending-row]", None)?;
    select_row(&s, &home.held, "Use this fixture:")?;
    let checkbox = visible(&s, "[data-test=finding-rule]")?;
    ensure!(checkbox.attr("value")?.as_deref() == Some("generic-secret"), "a checkbox per held rule");
    ensure!(!checkbox.selected()?, "no rule is accepted by default");
    shots.extend(screenshots(&s, "diff", "[data-test=diff]", Some("[data-test=diff]"))?);

    // Reject beta.
    select_row(&s, &home.beta, "Drain the beta queue")?;
    visible(&s, "[data-test=reject]")?.click()?;
    wait_status(&s, &format!("rejected {}", home.beta))?;
    wait_rows(&s, "beta's row gone", |ids| !ids.contains(&home.beta))?;
    ensure!(!home.skill_file("beta-notes").exists(), "a rejected write lands nothing");
    ensure!(!home.pending().contains(&home.beta), "a rejected write is no longer staged");

    // The held write: Approve without naming its rule is refused with the CLI's own words, and
    // nothing changes; with its rule's box checked it lands.
    let refusal = home.run(&["skills", "approve", &home.held]);
    ensure!(!refusal.status.success(), "the CLI refuses a held write without its rule: {}", text(&refusal));
    let refusal = String::from_utf8_lossy(&refusal.stderr).trim().to_string();
    ensure!(refusal.contains("--accept-finding generic-secret"), "{refusal}");
    select_row(&s, &home.held, "Use this fixture:")?;
    let before = home.tree();
    visible(&s, "[data-test=approve]")?.click()?;
    wait_status(&s, &refusal)?;
    ensure!(home.tree() == before, "a refused approval changes nothing");
    ensure!(!home.skill_file("api-fixtures").exists());
    let checkbox = visible(&s, "[data-test=finding-rule][value=generic-secret]")?;
    checkbox.click()?;
    ensure!(checkbox.selected()?, "the rule's box is checked");
    visible(&s, "[data-test=approve]")?.click()?;
    wait_status(&s, &format!("approved {}", home.held))?;
    let landed = std::fs::read_to_string(home.skill_file("api-fixtures")).context("api-fixtures landed")?;
    ensure!(landed.contains(&fixture()) && landed.contains("accepted-findings: generic-secret@"), "{landed}");
    wait_rows(&s, "an empty inbox", <[String]>::is_empty)?;

    // Meanwhile, in a terminal: a write is staged, then approved, with the CLI. The page shows
    // both without a reload. The write is hostile: its diff shows markup as text and hidden
    // characters as markers.
    let origin = time_origin(&s)?;
    let hostile = home.stage(
        "hostile-notes",
        "Hostile text. Use when testing the console.",
        &hostile_body(),
        "<b>bold</b> reason",
    );
    wait_rows(&s, "the write staged by the CLI", |ids| ids == [hostile.clone()])?;
    select_row(&s, &hostile, "<script>window.pwned=1</script>")?;
    let diff = s.find("[data-test=diff]")?.text()?;
    for raw in ['\u{1b}', '\u{202e}', '\u{200b}'] {
        ensure!(!diff.contains(raw), "the diff shows U+{:04X} as a marker, not raw: {diff:?}", raw as u32);
    }
    let lower = diff.to_lowercase();
    ensure!(
        lower.contains("202e") && lower.contains("200b") && lower.contains("[31mred") && diff.contains('→'),
        "hidden characters are marked (bidi, zero-width, escape; a tab as →): {diff:?}"
    );
    page_marks_what_the_host_hides(&s)?;
    ensure!(s.script("return typeof window.pwned;", vec![])? == "undefined", "the diff's markup never ran");
    ensure!(s.find("[data-test=diff]")?.find_all("script, img")?.is_empty(), "no element made from the diff");
    ensure!(row(&s, &hostile)?.text()?.contains("<b>bold</b> reason"), "the reason is shown as text");
    home.ok(&["skills", "approve", &hostile]);
    wait_rows(&s, "the write approved by the CLI gone", <[String]>::is_empty)?;
    ensure!(time_origin(&s)? == origin, "the page updated without a reload");

    // An agent's description as a YAML block scalar whose lines read like lifecycle fields: the
    // page shows status and pinned as the plugin parsed them, not as a line of text says.
    let block = home.stage(
        "block-notes",
        "Notes kept as a block. Use when testing the console.\nstatus: archived\npinned: true",
        "# Block notes\n",
        "a description in several lines",
    );
    home.ok(&["skills", "approve", &block]);
    let landed = std::fs::read_to_string(home.skill_file("block-notes"))?;
    ensure!(
        landed.contains("description: |-\n") && landed.contains("\n  status: archived\n  pinned: true\n"),
        "{landed}"
    );
    wait_rows(&s, "the block-notes write approved by the CLI gone", <[String]>::is_empty)?;

    // The approved hostile skill's page: the body is text.
    open_tab(&s, "skills")?;
    s.wait("hostile-notes's row", WAIT, || s.find("[data-test=skill-row][data-name=hostile-notes]").map(Some))?
        .click()?;
    let body = wait_text(&s, "[data-test=skill-text]", "<script>window.pwned=1</script>")?;
    ensure!(
        body.contains("<img src=x onerror=\"window.pwned=2\">") && body.contains("[31mred"),
        "the body as text: {body:?}"
    );
    ensure!(s.script("return typeof window.pwned;", vec![])? == "undefined", "the skill's markup never ran");
    ensure!(s.find("[data-test=skill-text]")?.find_all("script, img")?.is_empty(), "no element made from the skill");

    open_tab(&s, "skills")?;
    s.wait("block-notes's row", WAIT, || s.find("[data-test=skill-row][data-name=block-notes]").map(Some))?.click()?;
    wait_text(&s, "[data-test=skill-text]", "  status: archived\n  pinned: true")?;
    wait_text(&s, "[data-test=heading]", "block-notes")?;
    let status = s.find("[data-test=fact-status]")?.text()?;
    let pinned = s.find("[data-test=fact-pinned]")?.text()?;
    ensure!(
        status == "active" && pinned == "no",
        "a description's lines are no lifecycle: status {status:?}, pinned {pinned:?}"
    );
    ensure!(visible(&s, "[data-test=pin]")?.text()? == "Pin", "an unpinned skill offers Pin");
    ensure!(visible(&s, "[data-test=archive]")?.text()? == "Archive", "an active skill offers Archive");

    // A name from the URL (a link someone sent) is shown through the same renderer: the heading
    // marks the bidi override instead of obeying it, and so does every message naming it.
    s.goto(&format!("{}/#skill/%E2%80%AEevil", console.base()))?;
    let heading = wait_text(&s, "[data-test=heading]", "evil")?;
    ensure!(
        heading.contains("⟨U+202E⟩evil") && !heading.contains('\u{202e}'),
        "the heading shows a marker, not a raw U+202E: {heading:?}"
    );
    ensure!(
        s.find("[data-test=heading] .hid")?.attr("title")?.as_deref() == Some("RLO U+202E"),
        "the marker names the character"
    );
    let main = s.find("main")?.text()?;
    ensure!(!main.contains('\u{202e}'), "no raw U+202E anywhere in the view: {main:?}");
    let header = s.find("[data-test=home]")?.text()?;
    ensure!(header.contains(&format!("home {}", home.path.display())), "the header names the home: {header:?}");

    // Revert release-checklist to before version 2 from its page. Approval is on, so the revert
    // is staged; approved in the inbox, the file on disk is the first version's text again.
    open_tab(&s, "skills")?;
    s.wait("release-checklist's row", WAIT, || s.find("[data-test=skill-row][data-name=release-checklist]").map(Some))?
        .click()?;
    wait_text(&s, "[data-test=skill-text]", "Move the Unreleased entries")?;
    shots.extend(screenshots(&s, "skill", "[data-test=heading]", Some("[data-test=heading]"))?);

    // What Revert undoes is fixed when the page is first drawn (the newest version then, 2) and
    // named on the button. A version landed meanwhile by the CLI shows up, and changes neither.
    let named = wait_text(&s, "[data-test=revert]", "Revert to before version")?;
    ensure!(named == "Revert to before version 2", "the button names the version it undoes: {named:?}");
    ensure!(visible(&s, "[data-test=revert-version]")?.prop("value")? == "2", "the newest version is the default");
    home.tool(json!({"action": "view", "name": "release-checklist"}));
    let staged = home.tool(json!({"action": "patch", "name": "release-checklist",
        "old_string": "3. Tag the commit.", "new_string": "3. Tag the commit and push the tag.",
        "reason": "tags must reach the remote"}));
    let staged = staged["id"].as_str().with_context(|| format!("the patch was not staged: {staged}"))?.to_string();
    home.ok(&["skills", "approve", &staged]);
    wait_text(&s, "[data-test=skill-text]", "push the tag")?;
    s.wait("version 3 in the revert picker", WAIT, || {
        s.find("[data-test=revert-version] option[value=\"3\"]").map(Some)
    })?;
    let named = visible(&s, "[data-test=revert]")?.text()?;
    ensure!(named == "Revert to before version 2", "a version landed meanwhile does not move Revert: {named:?}");
    ensure!(visible(&s, "[data-test=revert-version]")?.prop("value")? == "2", "nor the picker");
    // Picking another version names it on the button.
    visible(&s, "[data-test=revert-version]")?.find("option[value=\"3\"]")?.click()?;
    wait_text(&s, "[data-test=revert]", "Revert to before version 3")?;

    let picker = visible(&s, "[data-test=revert-version]")?;
    let options: Vec<String> = picker
        .find_all("option")?
        .iter()
        .map(|o| o.attr("value").map(Option::unwrap_or_default))
        .collect::<Result<_>>()?;
    let option =
        picker.find("option[value=\"2\"]").with_context(|| format!("no version 2 to revert; options {options:?}"))?;
    option.click()?;
    ensure!(picker.prop("value")? == "2", "version 2 is picked");
    wait_text(&s, "[data-test=revert]", "Revert to before version 2")?;
    visible(&s, "[data-test=revert]")?.click()?;
    wait_status(&s, "staged the revert of release-checklist/SKILL.md")?;
    let revert = s.wait("the staged revert", WAIT, || Ok(home.pending().pop()))?;
    open_tab(&s, "inbox")?;
    wait_rows(&s, "the staged revert", |ids| ids == [revert.clone()])?;
    select_row(&s, &revert, "Move the Unreleased entries")?;
    visible(&s, "[data-test=approve]")?.click()?;
    wait_status(&s, &format!("approved {revert}"))?;
    let reverted = std::fs::read_to_string(home.skill_file("release-checklist"))?;
    ensure!(
        reverted.contains("2. Update CHANGELOG.md.") && !reverted.contains("Move the Unreleased"),
        "the file is as before version 2: {reverted}"
    );

    // The gate's charts: four images drawn by the server, loaded.
    open_tab(&s, "gate")?;
    wait_images(&s, "gate-chart", 4)?;
    shots.extend(screenshots(&s, "gate", "main", None)?);

    // A staged write evaluated by `self-evolve eval --pending` (issue 40 items 3 and 6): the
    // inbox shows what was found beside its diff, and the Evaluations view its report with the
    // chart the server draws.
    let helpful = home.stage(
        "eval-helper",
        "Helps with the console test. Use when testing.",
        "# Eval helper\n\nHELPS\n",
        "evaluated",
    );
    std::fs::create_dir_all(home.dir.path().join("task"))?;
    let suite = home.dir.path().join("suite.jsonl");
    std::fs::write(&suite, r#"{"id":"t1","prompt":"solve","folder":"task","check":"test -f done"}"#)?;
    let agent = format!("{} {{prompt}}", repo().join("cli/tests/fixtures/eval/fake-agent").display());
    let suite = suite.to_string_lossy();
    home.ok(&["eval", &suite, "--pending", &helpful, "--agent", &agent, "--repeat", "6"]);
    open_tab(&s, "inbox")?;
    select_row(&s, &helpful, "HELPS")?;
    wait_text(&s, "[data-test=fact-evaluated]", "better than without eval-helper: +100% [")?;
    open_tab(&s, "evals")?;
    wait_images(&s, "eval-chart", 1)?;
    let shown = wait_text(&s, "[data-test=evaluation]", "a-better")?;
    ensure!(
        shown.contains(&format!("eval-helper as staged ({helpful}) against without eval-helper"))
            && shown.contains("6/6 [61–100%]")
            && shown.contains("660 over 6 runs"),
        "the report's arms, Wilson interval and tokens: {shown}"
    );
    shots.extend(screenshots(&s, "evals", "main", None)?);
    s.quit()?;

    for shot in &shots {
        ensure!(std::fs::metadata(shot)?.len() > 2000, "{} is a picture", shot.display());
    }
    bless_readme_picture()?;
    Ok(())
}

/// What the page shows as a marker, code point by code point: exactly the host's list
/// (`self_evolve_scan::hides_text`, which the plugin and the CLI use) in `hostHides`, and in
/// `isHidden` that list plus control characters and the page's own additions (the no-break
/// space, variation selectors, Hangul fillers), which the host does not mark.
fn page_marks_what_the_host_hides(s: &Session) -> Result<()> {
    let ranges = |f: &dyn Fn(u32) -> bool| {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for cp in (0..=0x10ffff).filter(|&cp| f(cp)) {
            match out.last_mut() {
                Some((_, end)) if *end + 1 == cp => *end = cp,
                _ => out.push((cp, cp)),
            }
        }
        out
    };
    let page = |function: &str| -> Result<Vec<(u32, u32)>> {
        let found = s.script(
            &format!(
                "const out = []; let start = -1;
                 for (let cp = 0; cp <= 0x110000; cp++) {{
                   const on = cp <= 0x10ffff && {function}(cp);
                   if (on && start < 0) start = cp;
                   if (!on && start >= 0) {{ out.push([start, cp - 1]); start = -1; }}
                 }}
                 return out;"
            ),
            vec![],
        )?;
        serde_json::from_value(found).context("ranges")
    };
    let host = |cp: u32| char::from_u32(cp).is_some_and(self_evolve_scan::hides_text);
    let hex = |r: &[(u32, u32)]| r.iter().map(|(a, b)| format!("{a:04X}-{b:04X}")).collect::<Vec<_>>().join(" ");
    let (want, got) = (ranges(&host), page("hostHides")?);
    ensure!(got == want, "the page's copy of the host's list differs:\n page {}\n host {}", hex(&got), hex(&want));
    let extra = |cp: u32| {
        matches!(cp, 0xa0 | 0x115f | 0x1160 | 0x3164 | 0xffa0 | 0xfe00..=0xfe0f | 0xe0100..=0xe01ef)
            || char::from_u32(cp).is_some_and(char::is_control)
    };
    let (want, got) = (ranges(&|cp| host(cp) || extra(cp)), page("isHidden")?);
    ensure!(got == want, "the page marks other characters:\n page {}\n want {}", hex(&got), hex(&want));
    Ok(())
}

/// The README's picture is the inbox at 1280 px, light; rewritten only on request.
fn bless_readme_picture() -> Result<()> {
    let picture = repo().join("docs/img/console-inbox.png");
    if std::env::var("SELF_EVOLVE_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(picture.parent().unwrap())?;
        std::fs::copy(artefacts().join("inbox-1280-light.png"), &picture)?;
    }
    let readme = std::fs::read_to_string(repo().join("README.md"))?;
    ensure!(
        readme.contains("![The operator console's inbox](docs/img/console-inbox.png)"),
        "the README shows the inbox"
    );
    let png =
        std::fs::read(&picture).with_context(|| format!("{}: SELF_EVOLVE_BLESS=1 writes it", picture.display()))?;
    ensure!(png.starts_with(b"\x89PNG"), "{} is a PNG", picture.display());
    Ok(())
}
