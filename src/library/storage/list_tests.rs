//! Paged listing through `skill_manage` on the fake host: pages, totals, and what a page sees
//! of changes made since the last listing.

use crate::api::{CallContext, Origin};
use crate::fake::FakeHost;
use crate::host::{Host, Root, WriteMode};
use crate::plugin::Plugin;
use serde_json::Value;
#[cfg(target_arch = "wasm32")]
use wasm_bindgen_test::wasm_bindgen_test as test;

fn skill(name: &str, description: &str) -> Vec<u8> {
    format!("---\nname: {name}\ndescription: {description}\n---\nbody\n").into_bytes()
}

fn setup(n: usize) -> Plugin<FakeHost> {
    let host = FakeHost::new(1_767_225_600_000);
    host.map_root(Root::ProjectSkills("s1".into()));
    for i in 0..n {
        let name = format!("skill-{i:03}");
        host.write(
            &Root::UserSkills,
            &format!("{name}/SKILL.md"),
            &skill(&name, "Does a thing."),
            WriteMode::CreateNew,
        )
        .unwrap();
    }
    // Past the racy window: the roots' mtimes are trusted, so warm listings come from memory.
    host.advance(crate::library::storage::list_cache::RACY_MS);
    let mut plugin = Plugin::new(host);
    plugin.init("{}", &["tools".into()]).unwrap();
    plugin
}

fn list(plugin: &mut Plugin<FakeHost>, args: &str) -> Value {
    let ctx = CallContext {
        session: "s1".into(),
        agent: "main".into(),
        origin: Origin::User,
        depth: 0,
        cwd: "/work/project".into(),
    };
    let out = plugin.call_tool(&ctx, "skill_manage", &format!(r#"{{"action":"list"{args}}}"#)).unwrap();
    serde_json::from_str(&out).unwrap()
}

fn names(page: &Value) -> Vec<String> {
    page["skills"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap().to_string()).collect()
}

#[test]
fn list_pages_by_name_with_the_total_and_where_to_continue() {
    let mut plugin = setup(250);
    let first = list(&mut plugin, "");
    assert_eq!(
        (first["total"].as_u64(), first["offset"].as_u64(), first["next_offset"].as_u64()),
        (Some(250), Some(0), Some(100))
    );
    assert_eq!(names(&first).len(), 100);
    assert_eq!(names(&first)[0], "skill-000");
    let last = list(&mut plugin, r#","offset":200,"limit":80"#);
    assert_eq!(names(&last).len(), 50);
    assert_eq!(names(&last)[49], "skill-249");
    assert!(last.get("next_offset").is_none(), "{last}");
    assert_eq!(names(&list(&mut plugin, r#","limit":0"#)).len(), 1, "a limit below one is one");
    assert_eq!(names(&list(&mut plugin, r#","limit":5000"#)).len(), 250, "the most a page holds is 1000");
    assert!(names(&list(&mut plugin, r#","offset":999999"#)).is_empty());
    let refused = plugin
        .call_tool(
            &CallContext {
                session: "s1".into(),
                agent: "a".into(),
                origin: Origin::User,
                depth: 0,
                cwd: String::new(),
            },
            "skill_manage",
            r#"{"action":"list","limit":-1}"#,
        )
        .unwrap_err();
    assert!(refused.contains("invalid-args"), "{refused}");
}

#[test]
fn a_page_sees_edits_and_removals_of_the_skills_it_shows() {
    let mut plugin = setup(120);
    list(&mut plugin, "");
    plugin.host().advance(10);
    plugin
        .host()
        .write(&Root::UserSkills, "skill-005/SKILL.md", &skill("skill-005", "Does another thing."), WriteMode::Truncate)
        .unwrap();
    // SKILL.md removed, folder kept: the root's mtime does not change.
    plugin.host().remove_file(&Root::UserSkills, "skill-007/SKILL.md").unwrap();
    let page = list(&mut plugin, r#","limit":10"#);
    let skills = page["skills"].as_array().unwrap();
    assert_eq!(skills[5]["description"], "Does another thing.");
    assert!(!names(&page).contains(&"skill-007".to_string()), "{page}");
    assert_eq!(page["total"], 119);
    // A new skill (the root changes) is counted at once, wherever its page is.
    plugin.host().write(&Root::UserSkills, "zz-new/SKILL.md", &skill("zz-new", "New."), WriteMode::CreateNew).unwrap();
    assert_eq!(list(&mut plugin, r#","limit":1"#)["total"], 120);
}

#[test]
fn the_project_listing_is_persisted_under_the_sessions_folder() {
    let mut plugin = setup(3);
    plugin
        .host()
        .write(&Root::ProjectSkills("s1".into()), "proj/SKILL.md", &skill("proj", "Project one."), WriteMode::CreateNew)
        .unwrap();
    list(&mut plugin, "");
    let folders: Vec<String> = plugin
        .host()
        .snapshot()
        .get(&Root::State)
        .map(|state| state.keys().filter(|p| p.starts_with("index/") && p.ends_with(".json")).cloned().collect())
        .unwrap_or_default();
    assert!(folders.iter().any(|p| p.starts_with("index/user/")), "{folders:?}");
    assert!(folders.iter().any(|p| p.starts_with("index/project-")), "{folders:?}");
}

#[test]
fn a_warm_page_sees_a_skill_md_appearing_in_a_folder_that_was_not_a_skill() {
    let mut plugin = setup(5);
    plugin.host().create_dir_all(&Root::UserSkills, "later/references").unwrap();
    assert_eq!(list(&mut plugin, "")["total"], 5);
    assert_eq!(list(&mut plugin, "")["total"], 5, "warm, from the merged listing");
    // Inside an existing folder: the root's mtime does not change.
    plugin
        .host()
        .write(&Root::UserSkills, "later/SKILL.md", &skill("later", "Now a skill."), WriteMode::CreateNew)
        .unwrap();
    let page = list(&mut plugin, "");
    assert_eq!(page["total"], 6, "{page}");
    assert!(names(&page).contains(&"later".to_string()));
}

#[test]
fn a_skill_another_process_adds_in_the_same_clock_tick_is_never_missed() {
    let mut plugin = setup(3);
    assert_eq!(list(&mut plugin, "")["total"], 3);
    // Another process adds a skill: the root's mtime moves, this listing rescans.
    plugin.host().advance(5_000);
    let other = |plugin: &Plugin<FakeHost>, name: &str| {
        plugin.host().write(
            &Root::UserSkills,
            &format!("{name}/SKILL.md"),
            &skill(name, "Theirs."),
            WriteMode::CreateNew,
        )
    };
    other(&plugin, "from-b").unwrap();
    assert_eq!(list(&mut plugin, "")["total"], 4);
    // A third skill lands in the same millisecond: the root's mtime does not move at all, so a
    // listing trusting it would miss the skill for good.
    other(&plugin, "from-c").unwrap();
    let page = list(&mut plugin, "");
    assert_eq!(page["total"], 5, "{page}");
    assert!(names(&page).contains(&"from-c".to_string()));
    // Once the mtime is old enough it is trusted again, and nothing is lost.
    plugin.host().advance(crate::library::storage::list_cache::RACY_MS);
    assert_eq!(list(&mut plugin, "")["total"], 5);
    assert_eq!(list(&mut plugin, "")["total"], 5);
}

/// Issue 39: the racy rule is judged on the filesystem's clock. A process whose clock runs an
/// hour ahead of the files' (a replay's) once took a root changed this very tick for settled,
/// cached its scan, and missed a skill another process added in the same tick (the root's mtime
/// unchanged); a process whose clock runs behind never cached at all.
#[test]
fn a_process_clock_ahead_of_the_files_never_makes_a_fresh_root_look_settled() {
    let mut plugin = setup(1);
    plugin.host().step_process_clock(3_600_000);
    let host = plugin.host();
    host.write(&Root::UserSkills, "fresh-a/SKILL.md", &skill("fresh-a", "Does a."), WriteMode::CreateNew).unwrap();
    assert_eq!(names(&list(&mut plugin, "")), ["fresh-a", "skill-000"]);
    // Another process, in the same tick of the filesystem's clock: the root's mtime is unchanged.
    let host = plugin.host();
    host.write(&Root::UserSkills, "fresh-b/SKILL.md", &skill("fresh-b", "Does b."), WriteMode::CreateNew).unwrap();
    assert_eq!(names(&list(&mut plugin, "")), ["fresh-a", "fresh-b", "skill-000"]);

    // Behind: the process's clock two hours back, the files' clock past the window. The roots
    // are settled; once that is known, a listing asks the filesystem's clock nothing more (a
    // probe is a write).
    plugin.host().step_process_clock(-7_200_000);
    plugin.host().advance(crate::library::storage::list_cache::RACY_MS);
    assert_eq!(names(&list(&mut plugin, "")), ["fresh-a", "fresh-b", "skill-000"]);
    let writes = plugin.host().writes_so_far();
    list(&mut plugin, "");
    assert_eq!(plugin.host().writes_so_far(), writes, "a settled library probes nothing");
}
