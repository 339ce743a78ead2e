//! What the catalog serves and what it holds back, on the fake host through `Plugin`.

use super::*;
use crate::api::{CallContext, Origin};
use crate::fake::FakeHost;
use crate::host::{Root, WriteMode};
use crate::library::storage::list_cache::RACY_MS;
use crate::plugin::Plugin;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn ctx() -> CallContext {
    CallContext { session: "s1".into(), agent: "main".into(), origin: Origin::User, depth: 0, cwd: "/work/p".into() }
}

fn put(host: &FakeHost, root: &Root, path: &str, text: &str) {
    if let Some((dir, _)) = path.rsplit_once('/') {
        host.create_dir_all(root, dir).unwrap();
    }
    host.write(root, path, text.as_bytes(), WriteMode::CreateNew).unwrap();
}

fn skill(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\nBody.\n")
}

fn plugin() -> Plugin<FakeHost> {
    let host = FakeHost::new(1_767_225_600_000);
    let project = Root::ProjectSkills("s1".into());
    host.map_root(project.clone());
    put(&host, &Root::UserSkills, "alpha/SKILL.md", &skill("alpha", "User alpha."));
    put(&host, &Root::UserSkills, "alpha/references/api.md", "# API\n");
    put(&host, &Root::UserSkills, "alpha/.DS_Store", "junk");
    put(&host, &Root::UserSkills, "alpha/forms.md", "Forms.\n");
    put(&host, &project, "alpha/SKILL.md", &skill("alpha", "Project alpha wins."));
    put(&host, &Root::UserSkills, "bravo.md", &skill("bravo", "A flat skill."));
    put(&host, &Root::UserSkills, "no-desc/SKILL.md", "---\nname: no-desc\n---\nBody.\n");
    put(&host, &Root::UserSkills, "wrong-folder/SKILL.md", &skill("other-name", "Misplaced."));
    put(&host, &Root::UserSkills, "broken/SKILL.md", "---\nname: [unclosed\n---\n");
    put(
        &host,
        &Root::UserSkills,
        "retired/SKILL.md",
        "---\nname: retired\ndescription: Old.\nmetadata:\n  status: archived\n---\nBody.\n",
    );
    put(
        &host,
        &Root::UserSkills,
        "typed/SKILL.md",
        "---\nname: typed\ndescription: Typed fields.\nversion: 2\nweight: 1.5\nbeta: true\nnothing: ~\nquoted: \"7\"\nlicense: MIT\nallowed-tools: [Read, Bash]\n---\nBody.\n",
    );
    put(&host, &Root::UserSkills, "linked/SKILL.md", &skill("linked", "Has a link."));
    host.add_symlink(&Root::UserSkills, "linked/evil.md");
    let mut plugin = Plugin::new(host);
    plugin.init("{}", &["tools".into()]).unwrap();
    plugin
}

fn names(page: &Page) -> Vec<&str> {
    page.skills.iter().map(|s| s.name.as_str()).collect()
}

#[test]
fn serves_valid_skills_once_each_with_project_over_user_and_holds_back_the_rest() {
    let mut plugin = plugin();
    let page = plugin.catalog_page(&ctx(), 0, 100).unwrap();
    assert_eq!(names(&page), ["alpha", "bravo", "typed"], "{page:?}");
    assert_eq!(page.next_offset, None);
    let alpha = &page.skills[0];
    assert_eq!((alpha.scope, alpha.description.as_str()), ("project", "Project alpha wins."));
    assert_eq!(alpha.files.len(), 1, "the project copy has no supporting files: {alpha:?}");
    for held_back in ["no-desc", "wrong-folder", "broken", "retired", "linked"] {
        assert!(plugin.host().logged(&format!("not serving skill `{held_back}`")), "{held_back} is logged");
    }
}

#[test]
fn entries_carry_every_file_with_size_and_sha256_and_typed_frontmatter() {
    let mut plugin = plugin();
    plugin.host().remove_file(&Root::ProjectSkills("s1".into()), "alpha/SKILL.md").unwrap();
    let alpha = plugin.catalog_get(&ctx(), "alpha").unwrap();
    assert_eq!(alpha.scope, "user");
    let paths: Vec<&str> = alpha.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["SKILL.md", "forms.md", "references/api.md"], "hidden files are not served");
    let api = &alpha.files[2];
    assert_eq!(api.size, 6);
    assert_eq!(api.sha256, sha256_hex(b"# API\n"));
    assert_eq!(api.sha256.len(), 64);

    let typed = plugin.catalog_get(&ctx(), "typed").unwrap();
    assert!(typed.frontmatter_json.starts_with(r#"{"name":"typed","description""#), "source order");
    let frontmatter: serde_json::Value = serde_json::from_str(&typed.frontmatter_json).unwrap();
    assert_eq!(
        frontmatter,
        serde_json::json!({"name": "typed", "description": "Typed fields.", "version": 2, "weight": 1.5,
            "beta": true, "nothing": null, "quoted": "7", "license": "MIT", "allowed-tools": ["Read", "Bash"]})
    );
    let bravo = plugin.catalog_get(&ctx(), "bravo").unwrap();
    assert_eq!(bravo.files.len(), 1, "a flat skill is its SKILL.md alone");
}

#[test]
fn reads_serve_listed_files_only_and_count_as_the_agent_reading_the_skill() {
    let mut plugin = plugin();
    let before = plugin.host().snapshot();
    let bytes = plugin.catalog_read(&ctx(), "alpha", "SKILL.md").unwrap();
    assert_eq!(String::from_utf8(bytes).unwrap(), skill("alpha", "Project alpha wins."));
    let ours = plugin.catalog_read(&ctx(), "bravo", "SKILL.md").unwrap();
    assert_eq!(ours, skill("bravo", "A flat skill.").into_bytes());

    for (name, path, code) in [
        ("alpha", "references/api.md", "not-found"), // the user copy's file: shadowed
        ("alpha", "../bravo.md", "not-found"),
        ("alpha", ".DS_Store", "not-found"),
        ("retired", "SKILL.md", "not-served"),
        ("linked", "SKILL.md", "not-served"),
        ("nobody", "SKILL.md", "not-found"),
        ("../etc", "SKILL.md", "invalid-name"),
    ] {
        let err = plugin.catalog_read(&ctx(), name, path).unwrap_err();
        assert!(err.contains(&format!("\"code\":\"{code}\"")), "{name}/{path}: {err}");
    }
    // Reading changes nothing on disk but the reading session's state (its read registry).
    let mut after = plugin.host().snapshot();
    if let Some(state) = after.get_mut(&Root::State) {
        state.retain(|path, _| !path.starts_with("sessions"));
    }
    assert_eq!(after, before, "reading changes nothing on disk");

    // The SKILL.md read registers, as a `view` would: another agent creates a skill; this agent
    // may patch it only after reading it through the catalog.
    let other = CallContext { agent: "other".into(), ..ctx() };
    let create = r#"{"action":"create","name":"charlie","description":"Charlie does things. Use when testing.","body":"Step one.\n"}"#;
    plugin.call_tool(&other, "skill_manage", create).unwrap();
    let patch = r#"{"action":"patch","name":"charlie","old_string":"Step one.","new_string":"Step two."}"#;
    let err = plugin.call_tool(&ctx(), "skill_manage", patch).unwrap_err();
    assert!(err.contains("not-read"), "{err}");
    plugin.catalog_read(&ctx(), "charlie", "SKILL.md").unwrap();
    plugin.call_tool(&ctx(), "skill_manage", patch).unwrap();
}

#[test]
fn a_page_skips_what_is_not_served_and_says_where_to_go_on() {
    let mut plugin = plugin();
    let first = plugin.catalog_page(&ctx(), 0, 3).unwrap();
    // alpha, bravo, broken: broken is not served, so the page holds two.
    assert_eq!(names(&first), ["alpha", "bravo"]);
    assert_eq!(first.next_offset, Some(3));
    let mut seen: Vec<String> = names(&first).iter().map(|s| s.to_string()).collect();
    let mut next = first.next_offset;
    while let Some(offset) = next {
        let page = plugin.catalog_page(&ctx(), offset, 3).unwrap();
        seen.extend(names(&page).iter().map(|s| s.to_string()));
        next = page.next_offset;
    }
    assert_eq!(seen, ["alpha", "bravo", "typed"]);
}

#[test]
fn plain_scalars_are_typed_as_yaml_core_reads_them() {
    let plain = |t: &str| to_json(&Value::Str { text: t.into(), plain: true });
    assert_eq!(plain("12"), serde_json::json!(12));
    assert_eq!(plain("-3"), serde_json::json!(-3));
    assert_eq!(plain("1e3"), serde_json::json!(1000.0));
    assert_eq!(plain(".5"), serde_json::json!(0.5));
    assert_eq!(plain("False"), serde_json::json!(false));
    for text in ["1.2.3", "v1", "12abc", "0x1F", ".inf", "1e", "-", "99999999999999999999"] {
        assert_eq!(plain(text), serde_json::json!(text), "{text} stays a string");
    }
    assert_eq!(to_json(&Value::str("true")), serde_json::json!("true"), "quoted stays a string");
}

#[test]
fn a_skill_over_the_seps_limits_is_not_served_nor_read() {
    let mut plugin = plugin();
    let host = plugin.host();
    put(host, &Root::UserSkills, "many/SKILL.md", &skill("many", "Many files."));
    for i in 0..MAX_FILES {
        put(host, &Root::UserSkills, &format!("many/references/{i:03}.md"), "x\n");
    }
    put(host, &Root::UserSkills, "heavy/SKILL.md", &skill("heavy", "Heavy files."));
    let half = "x".repeat((MAX_BYTES / 2) as usize);
    put(host, &Root::UserSkills, "heavy/assets/a.txt", &half);
    put(host, &Root::UserSkills, "heavy/assets/b.txt", &half);
    for (name, why) in [("many", "more than 512 files"), ("heavy", "more than 16777216 bytes")] {
        let err = plugin.catalog_get(&ctx(), name).unwrap_err();
        assert!(err.contains("not-served") && err.contains(why), "{name}: {err}");
        let err = plugin.catalog_read(&ctx(), name, "SKILL.md").unwrap_err();
        assert!(err.contains("not-served"), "{name}: {err}");
    }
    let names: Vec<String> = plugin.catalog_page(&ctx(), 0, 100).unwrap().skills.into_iter().map(|s| s.name).collect();
    assert!(!names.iter().any(|n| n == "many" || n == "heavy"), "{names:?}");
    // One file fewer, one byte less: served.
    plugin.host().remove_file(&Root::UserSkills, "many/references/000.md").unwrap();
    assert_eq!(plugin.catalog_get(&ctx(), "many").unwrap().files.len(), MAX_FILES);
    let skill_md = skill("heavy", "Heavy files.").len();
    let fits = "x".repeat((MAX_BYTES as usize) / 2 - skill_md);
    plugin.host().write(&Root::UserSkills, "heavy/assets/b.txt", fits.as_bytes(), WriteMode::Truncate).unwrap();
    assert_eq!(plugin.catalog_get(&ctx(), "heavy").unwrap().files.len(), 3);
    assert_eq!(plugin.catalog_read(&ctx(), "heavy", "assets/b.txt").unwrap().len(), fits.len());
}

#[test]
fn a_page_of_large_skills_ends_early_and_says_where_to_go_on() {
    let host = FakeHost::new(1_767_225_600_000);
    for name in ["aa", "bb", "cc", "dd"] {
        put(&host, &Root::UserSkills, &format!("{name}/SKILL.md"), &skill(name, "Large."));
        put(&host, &Root::UserSkills, &format!("{name}/references/big.md"), &"x".repeat(400));
    }
    let mut cache = ListCache::default();
    // Room for two skills' bytes per page: each page serves what fits (at least one), in order.
    let budget = 2 * 460;
    let mut seen = Vec::new();
    let mut offset = Some(0);
    let mut pages = 0;
    while let Some(at) = offset {
        let (page, skipped) = page_within(&host, "s1", &mut cache, at, 100, budget);
        assert!(skipped.is_empty() && !page.skills.is_empty(), "a page serves at least one skill");
        seen.extend(page.skills.iter().map(|s| s.name.clone()));
        offset = page.next_offset;
        pages += 1;
    }
    assert_eq!(seen, ["aa", "bb", "cc", "dd"], "every skill once");
    assert_eq!(pages, 2);
    // Any budget: one skill per page when a single skill is over it.
    let (page, _) = page_within(&host, "s1", &mut cache, 0, 100, 1);
    assert_eq!((page.skills.len(), page.next_offset), (1, Some(1)));
}

/// The served files' digests of one skill, from a page.
fn digests(page: &Page, name: &str) -> Vec<(String, u64, String)> {
    let skill = page.skills.iter().find(|s| s.name == name).expect("served");
    skill.files.iter().map(|f| (f.path.clone(), f.size, f.sha256.clone())).collect()
}

/// Writes a file as another process would, then stamps it with `mtime` (as `File::set_modified`
/// does): its folder's mtime is what the write made it.
fn rewrite_stamped(host: &FakeHost, root: &Root, path: &str, text: &str, mtime: u64) {
    host.write(root, path, text.as_bytes(), WriteMode::Truncate).unwrap();
    let mut roots = host.roots.borrow_mut();
    let entries = roots.get_mut(root).unwrap();
    entries.insert(path.to_string(), crate::fake::Node::File { data: text.as_bytes().to_vec(), modified_ms: mtime });
}

fn first_page(host: &FakeHost, cache: &mut ListCache) -> Page {
    let (page, skipped) = page(host, "s1", cache, 0, 100);
    assert!(skipped.is_empty());
    page
}

/// A warm page serves each skill's entry from memory while its files and folders stat as they
/// did; an entry made while an mtime was within the racy window of its stat is never kept, so a
/// rewrite of the same size stamped back to the same mtime (one timestamp tick) is seen.
#[test]
fn a_served_entry_made_in_the_racy_window_is_not_kept_and_a_same_tick_rewrite_is_seen() {
    let host = FakeHost::new(1_767_225_600_000);
    put(&host, &Root::UserSkills, "alpha/SKILL.md", &skill("alpha", "Alpha."));
    put(&host, &Root::UserSkills, "alpha/references/api.md", "version 1\n");
    let written = host.now_ms();
    let mut cache = ListCache::default();
    let before = first_page(&host, &mut cache);
    assert!(cache.served.is_empty(), "an mtime of this tick is not settled: nothing is cached");

    // Same size, same mtime (the same tick), other bytes.
    rewrite_stamped(&host, &Root::UserSkills, "alpha/references/api.md", "version 2\n", written);
    let after = first_page(&host, &mut cache);
    assert_ne!(digests(&after, "alpha"), digests(&before, "alpha"));
    assert_eq!(digests(&after, "alpha")[1].2, crate::digest::sha256_hex(b"version 2\n"));

    // Once settled, the entry is kept, and served while nothing changed.
    host.advance(RACY_MS);
    let settled = first_page(&host, &mut cache);
    assert_eq!(settled, after);
    assert_eq!(cache.served.len(), 1, "kept once every mtime is settled");
    assert_eq!(first_page(&host, &mut cache), after, "served from the cache");
}

/// A kept entry is dropped when anything under the skill changes: an edit of the same size
/// stamped with a new mtime, an atomic replace stamped back to the old mtime (its folder's mtime
/// moves: a new inode enters it), a file added; every page equals an uncached one.
#[test]
fn a_kept_entry_is_dropped_on_any_change_and_pages_equal_uncached_ones() {
    let host = FakeHost::new(1_767_225_600_000);
    let project = Root::ProjectSkills("s1".into());
    host.map_root(project.clone());
    for i in 0..30 {
        let root = if i % 3 == 0 { project.clone() } else { Root::UserSkills };
        put(&host, &root, &format!("s{i:02}/SKILL.md"), &skill(&format!("s{i:02}"), "Some skill."));
        put(&host, &root, &format!("s{i:02}/references/api.md"), "api 1\n");
    }
    put(&host, &Root::UserSkills, "flat.md", &skill("flat", "A flat skill."));
    let mut warm = ListCache::default();
    let uncached = |host: &FakeHost| first_page(host, &mut ListCache::default());
    let check = |host: &FakeHost, warm: &mut ListCache| {
        host.advance(RACY_MS);
        let page = first_page(host, warm);
        assert_eq!(page, uncached(host), "a warm page equals an uncached one");
        page
    };
    check(&host, &mut warm);
    assert_eq!(warm.served.len(), 31);
    let old = digests(&check(&host, &mut warm), "s01");

    // Same size, new mtime.
    host.write(&Root::UserSkills, "s01/references/api.md", b"api 2\n", WriteMode::Truncate).unwrap();
    let page = check(&host, &mut warm);
    assert_ne!(digests(&page, "s01"), old);

    // Atomic replace, stamped back to the replaced file's mtime, same size.
    let stamp = host.stat(&Root::UserSkills, "s02/SKILL.md").unwrap().modified_ms;
    let before = digests(&page, "s02");
    let text = skill("s02", "Other skill.");
    put(&host, &Root::UserSkills, "s02/.SKILL.md.tmp", &text);
    host.rename(&Root::UserSkills, "s02/.SKILL.md.tmp", "s02/SKILL.md").unwrap();
    rewrite_stamped(&host, &Root::UserSkills, "s02/SKILL.md", &text, stamp);
    let page = check(&host, &mut warm);
    assert_ne!(digests(&page, "s02"), before);

    // A file added to a subfolder; the flat skill edited; a project skill's file removed.
    put(&host, &Root::UserSkills, "s04/references/more.md", "more\n");
    host.write(&Root::UserSkills, "flat.md", skill("flat", "A flat one.").as_bytes(), WriteMode::Truncate).unwrap();
    host.remove_file(&project, "s03/references/api.md").unwrap();
    let page = check(&host, &mut warm);
    assert_eq!(digests(&page, "s04").len(), 3);
    assert_eq!(digests(&page, "s03").len(), 1);
    assert_eq!(page.skills.iter().find(|s| s.name == "flat").unwrap().description, "A flat one.");
}
