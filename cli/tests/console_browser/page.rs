//! Reading the console's page through WebDriver: focus, rows, texts, tabs and screenshots, for
//! the browser tests in console_browser.rs.

use super::{SIZES, WAIT};
use anyhow::{Context, Result, bail, ensure};
use console_support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use webdriver::{Element, Session, key};

use super::{console_support, webdriver};

/// What has focus, and whether a person can see it.
pub fn focus(s: &Session) -> Result<Value> {
    s.script(
        "const e = document.activeElement;
         if (!e || e === document.body) return {test: null, row: null};
         const st = getComputedStyle(e);
         const row = e.closest('[data-test=pending-row]');
         return {test: e.getAttribute('data-test'), row: row && row.getAttribute('data-id'), tag: e.tagName,
                 text: (e.textContent || '').trim().slice(0, 60), focusVisible: e.matches(':focus-visible'),
                 outline: st.outlineStyle, outlineWidth: parseFloat(st.outlineWidth) || 0, shadow: st.boxShadow};",
        vec![],
    )
}

pub fn focus_is_visible(f: &Value) -> bool {
    let outline = f["outline"] != "none" && f["outlineWidth"].as_f64().unwrap_or(0.0) > 0.0;
    let shadow = f["shadow"].as_str().is_some_and(|s| s != "none");
    f["focusVisible"] == true && (outline || shadow)
}

/// Presses Tab until `wanted` holds for what has focus (at most 80 presses); that focus.
pub fn tab_to(s: &Session, what: &str, wanted: impl Fn(&Value) -> bool) -> Result<Value> {
    let mut seen = Vec::new();
    for _ in 0..80 {
        s.press(&[key::TAB])?;
        let f = focus(s)?;
        if wanted(&f) {
            return Ok(f);
        }
        seen.push(format!(
            "{}{}",
            f["tag"].as_str().unwrap_or("body"),
            f["test"].as_str().map(|t| format!("[{t}]")).unwrap_or_default()
        ));
    }
    bail!("Tab never reached {what}; the tab order went: {}", seen.join(" → "))
}

/// The inbox's rows' ids, in order.
pub fn rows(s: &Session) -> Result<Vec<String>> {
    s.find_all("[data-test=pending-row]")?.iter().map(|r| Ok(r.attr("data-id")?.unwrap_or_default())).collect()
}

pub fn wait_rows(s: &Session, what: &str, wanted: impl Fn(&[String]) -> bool) -> Result<Vec<String>> {
    s.wait(what, WAIT, || {
        let ids = rows(s)?;
        Ok(wanted(&ids).then_some(ids))
    })
}

pub fn row<'s, 'd>(s: &'s Session<'d>, id: &str) -> Result<Element<'s, 'd>> {
    s.find(&format!("[data-test=pending-row][data-id=\"{id}\"]"))
}

/// The rendered text of the first `css` element once it holds `needle`.
pub fn wait_text(s: &Session, css: &str, needle: &str) -> Result<String> {
    s.wait(&format!("{css} to show {needle:?}"), WAIT, || {
        let text = s.find(css)?.text()?;
        Ok(text.contains(needle).then_some(text))
    })
    .with_context(|| format!("{css} holds {:?}", s.find(css).and_then(|e| e.text()).unwrap_or_default()))
}

/// Waits for the status region to show `needle`.
pub fn wait_status(s: &Session, needle: &str) -> Result<String> {
    wait_text(s, "[data-test=status]", needle)
}

/// The displayed element among those matching `css` (the page may keep hidden copies).
pub fn visible<'s, 'd>(s: &'s Session<'d>, css: &str) -> Result<Element<'s, 'd>> {
    s.wait(&format!("a displayed {css}"), WAIT, || {
        for e in s.find_all(css)? {
            if e.displayed()? {
                return Ok(Some(e));
            }
        }
        Ok(None)
    })
}

pub fn select_row(s: &Session, id: &str, shows: &str) -> Result<()> {
    s.wait(&format!("row {id}"), WAIT, || row(s, id).map(Some))?.click()?;
    wait_text(s, "[data-test=diff]", shows).map(drop)
}

pub fn open_tab(s: &Session, name: &str) -> Result<()> {
    let tab = s.find(&format!("[data-test=tab-{name}]"))?;
    tab.click()?;
    s.wait(&format!("the {name} tab selected"), WAIT, || {
        Ok((tab.attr("aria-selected")?.as_deref() == Some("true")).then_some(()))
    })
}

pub fn time_origin(s: &Session) -> Result<f64> {
    Ok(s.script("return performance.timeOrigin;", vec![])?.as_f64().unwrap_or(0.0))
}

/// WCAG contrast of an element's text against the colour behind it, and that background's
/// relative luminance.
pub fn contrast(s: &Session, css: &str) -> Result<(f64, f64)> {
    let colours = s.script(
        "const e = document.querySelector(arguments[0]); if (!e) return null;
         const parse = c => (c.match(/[\\d.]+/g) || []).map(Number);
         let bg = null;
         for (let n = e; n; n = n.parentElement) {
           const c = parse(getComputedStyle(n).backgroundColor);
           if (c.length === 3 || (c.length === 4 && c[3] > 0)) { bg = c; break; }
         }
         if (!bg) bg = matchMedia('(prefers-color-scheme: dark)').matches ? [18, 18, 18] : [255, 255, 255];
         return {fg: parse(getComputedStyle(e).color), bg: bg};",
        vec![json!(css)],
    )?;
    ensure!(!colours.is_null(), "no {css} to measure");
    let lum = |c: &Value| {
        let ch = |i: usize| {
            let v = c[i].as_f64().unwrap_or(0.0) / 255.0;
            if v <= 0.03928 { v / 12.92 } else { ((v + 0.055) / 1.055).powf(2.4) }
        };
        0.2126 * ch(0) + 0.7152 * ch(1) + 0.0722 * ch(2)
    };
    let (fg, bg) = (lum(&colours["fg"]), lum(&colours["bg"]));
    Ok(((fg.max(bg) + 0.05) / (fg.min(bg) + 0.05), bg))
}

/// At each width and scheme: the page fits the width (wide tables scroll inside themselves),
/// its text is readable (contrast ≥ 4.5) on a light or a dark background as asked, and a
/// screenshot `NAME-WIDTH-SCHEME.png` is saved, scrolled to the top of `show` (as a person
/// scrolls; None: the page's top). Leaves the window at 1280 px, light.
pub fn screenshots(s: &Session, name: &str, text_css: &str, show: Option<&str>) -> Result<Vec<PathBuf>> {
    let mut saved = Vec::new();
    for (width, height) in SIZES {
        s.set_window(width, height)?;
        for dark in [false, true] {
            s.color_scheme(dark)?;
            let scheme = if dark { "dark" } else { "light" };
            match show {
                Some(css) => s.script(
                    "document.querySelector(arguments[0]).scrollIntoView({block: 'start'});",
                    vec![json!(css)],
                )?,
                None => s.script("window.scrollTo(0, 0);", vec![])?,
            };
            // Let a layout and a paint happen.
            s.script("return new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));", vec![])?;
            let fit = s.script("return [document.documentElement.scrollWidth, window.innerWidth];", vec![])?;
            ensure!(
                fit[0].as_f64() <= fit[1].as_f64().map(|w| w + 1.0),
                "{name} at {width} px ({scheme}): the page is {} px wide, wider than the window",
                fit[0]
            );
            for css in ["body", text_css] {
                let (ratio, background) = contrast(s, css)?;
                ensure!(ratio >= 4.5, "{name} at {width} px ({scheme}): {css} text contrast {ratio:.2} < 4.5");
                ensure!(
                    if dark { background < 0.2 } else { background > 0.5 },
                    "{name} at {width} px ({scheme}): {css} sits on a background of luminance {background:.2}"
                );
            }
            let path = artefacts().join(format!("{name}-{width}-{scheme}.png"));
            s.screenshot(&path)?;
            saved.push(path);
        }
    }
    s.set_window(SIZES[0].0, SIZES[0].1)?;
    s.color_scheme(false)?;
    Ok(saved)
}

/// Waits for `count` images marked `data-test=NAME`, each loaded (a picture, not a broken link)
/// and described (`alt`).
pub fn wait_images(s: &Session, name: &str, count: usize) -> Result<()> {
    s.wait(&format!("{count} loaded {name} images"), WAIT, || {
        let loaded = s.script(
            "const imgs = [...document.querySelectorAll(`[data-test=${arguments[0]}]`)];
             return imgs.length === arguments[1] && imgs.every(i => i.complete && i.naturalWidth > 0 && i.alt);",
            vec![json!(name), json!(count)],
        )?;
        Ok((loaded == true).then_some(()))
    })
}
