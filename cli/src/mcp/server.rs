//! The MCP handler: `skill_manage` as the one tool (a refusal is a tool error whose text is the
//! plugin's error JSON), and the skills the plugin serves through SEP-2640's Skills Extension
//! (`skills/list`, `skills/get`, `resources/list`, `resources/read`, `skill://index.json`). Every
//! answer comes from the plugin (`catalog` export): what is served, shadowing and the guards
//! live there, not here.
//!
//! One handler for both transports (stdio, `serve`'s Streamable HTTP) and every revision: a
//! 2025 client hears of a landed write by `notifications/resources/list_changed` on its session,
//! a 2026-07-28 client by the `subscriptions/listen` it holds open (`changes`).

use super::uris;
use super::worker::Worker;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, DiscoverResult,
    GetSkillRequestParams, GetSkillResult, Implementation, JsonObject, ListResourcesResult, ListSkillsResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig, Skill, SkillFrontmatter,
    SkillResource, SkillResources, SubscriptionFilter, Tool,
};
use rmcp::service::{RequestContext, SubscriptionContext, SubscriptionSendError};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use self_evolve_host::plugin::{CallContext, CatalogPage, ServedSkill};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Skills per `skills/list` and `resources/list` page.
pub const PAGE: u32 = 100;

/// How long a 2026-07-28 client may keep `server/discover` and `tools/list` (SEP-2549): what
/// they say is fixed for the life of the process (the tool's schema, the capabilities), and the
/// same for every client. Five minutes, so a server restarted on a new binary is seen soon.
/// Everything that reflects the library (skills/list, skills/get, resources/list and read) is
/// left at rmcp's `ttlMs: 0`, `private`: another process (an agent, a hook, the operator's
/// approval, a team sync) may land a write at any moment without this one hearing of it.
pub const FIXED_TTL_MS: u64 = 5 * 60 * 1000;

/// The person an HTTP request was made for (their bearer token's name), put in the request's
/// extensions by `serve` before rmcp sees it.
#[derive(Clone, Debug)]
pub struct Person(pub String);

#[derive(Clone)]
pub struct Server {
    worker: Worker,
    ctx: Arc<CallContext>,
    tool: Tool,
    /// Runs after a write landed (a team library commits it), on the plugin's thread.
    after_landing: Option<Arc<dyn Fn() + Send + Sync>>,
    /// Told each time a write landed through this server: every `subscriptions/listen` held open
    /// (one per 2026-07-28 client, on any transport) sends its list-changed.
    changes: tokio::sync::broadcast::Sender<()>,
}

impl Server {
    /// `tool` is the plugin's own `skill_manage` spec (name, description, JSON schema).
    pub fn new(worker: Worker, ctx: CallContext, tool: Tool) -> Server {
        let (changes, _) = tokio::sync::broadcast::channel(16);
        Server { worker, ctx: Arc::new(ctx), tool, after_landing: None, changes }
    }

    /// Tells every client listening that the library changed (a write landed, a sync pulled).
    pub fn changed(&self) {
        let _ = self.changes.send(());
    }

    /// What to run after each write that landed.
    pub fn after_landing(mut self, f: impl Fn() + Send + Sync + 'static) -> Server {
        self.after_landing = Some(Arc::new(f));
        self
    }

    /// Whose call this is: over HTTP, the person whose token the request carried (`Person`,
    /// set by `serve`), as session `http-PERSON`, so their reads and writes are theirs in the
    /// history and session state; else the server's own context.
    fn ctx_for(&self, context: &RequestContext<RoleServer>) -> Arc<CallContext> {
        let person =
            context.extensions.get::<http::request::Parts>().and_then(|parts| parts.extensions.get::<Person>());
        match person {
            Some(Person(name)) => Arc::new(CallContext { session: format!("http-{name}"), ..(*self.ctx).clone() }),
            None => self.ctx.clone(),
        }
    }

    async fn page(
        &self,
        ctx: Arc<CallContext>,
        cursor: Option<&str>,
        ct: &CancellationToken,
    ) -> Result<CatalogPage, McpError> {
        let offset = match cursor {
            None => 0,
            Some(cursor) => parse_cursor(cursor)?,
        };
        let answer =
            self.worker.call_unless(ct, move |p| p.catalog_skills(&ctx, offset, PAGE)).await.map_err(internal)?;
        answer.map_err(|e| internal(anyhow::anyhow!("{e}")))?.map_err(|refusal| plugin_refusal(&refusal))
    }

    async fn skill(
        &self,
        ctx: Arc<CallContext>,
        name: String,
        ct: &CancellationToken,
    ) -> Result<Result<ServedSkill, String>, McpError> {
        let answer = self.worker.call_unless(ct, move |p| p.catalog_get(&ctx, &name)).await.map_err(internal)?;
        answer.map_err(|e| internal(anyhow::anyhow!("{e}")))
    }

    /// Every served skill, page by page (for the well-known index).
    async fn all(&self, ctx: Arc<CallContext>, ct: &CancellationToken) -> Result<Vec<ServedSkill>, McpError> {
        let mut skills = Vec::new();
        let mut cursor = None;
        loop {
            let page = self.page(ctx.clone(), cursor.as_deref(), ct).await?;
            skills.extend(page.skills);
            match page.next_offset {
                Some(next) => cursor = Some(next.to_string()),
                None => return Ok(skills),
            }
        }
    }
}

fn parse_cursor(cursor: &str) -> Result<u32, McpError> {
    cursor.parse().map_err(|_| McpError::invalid_params(format!("`{cursor}` is not a cursor this server gave"), None))
}

fn internal(err: anyhow::Error) -> McpError {
    McpError::internal_error(format!("{err:#}"), None)
}

/// A plugin refusal as a protocol error: -32602, as SEP-2640 asks for a skill or file the server
/// does not serve; the plugin's structured JSON rides along as `data`.
fn plugin_refusal(refusal: &str) -> McpError {
    let data: Value = serde_json::from_str(refusal).unwrap_or_else(|_| json!({"message": refusal}));
    let message = data["message"].as_str().unwrap_or(refusal).to_string();
    McpError::invalid_params(message, Some(data))
}

/// The SEP-2640 entry of a served skill.
pub fn entry(skill: &ServedSkill) -> Skill {
    let frontmatter: JsonObject = serde_json::from_str(&skill.frontmatter_json).unwrap_or_default();
    let mut extra = frontmatter;
    extra.remove("name");
    extra.remove("description");
    let mut fm = SkillFrontmatter::new(&skill.name, &skill.description);
    fm.extra = extra;
    let files = skill
        .files
        .iter()
        .map(|f| SkillResource::new(uris::file(&skill.name, &f.path), format!("sha256:{}", f.sha256), f.size))
        .collect();
    Skill::new(uris::skill(&skill.name), fm, SkillResources::Files(files))
}

/// `resources/list` shows each served skill's SKILL.md (its files are reached from the entry).
fn listing(skill: &ServedSkill) -> Resource {
    let size = skill.files.first().map_or(0, |f| f.size);
    Resource::new(uris::skill(&skill.name), &skill.name)
        .with_description(&skill.description)
        .with_mime_type("text/markdown")
        .with_size(size)
}

/// `skill://index.json` in the shape SEP-2640's drafts defined before `skills/list` replaced it
/// (2026-08-21): `{"skills": [{uri, frontmatter, resources: [{uri, digest}]}]}`. The final SEP
/// has no index; it is kept for clients written against the drafts, and it is the same data.
pub fn index(skills: &[ServedSkill]) -> Value {
    let entries: Vec<Value> = skills
        .iter()
        .map(|s| {
            let skill = entry(s);
            let files: Vec<Value> = match &skill.resources {
                SkillResources::Files(files) => {
                    files.iter().map(|f| json!({"uri": f.uri, "digest": f.digest})).collect()
                }
                _ => Vec::new(),
            };
            json!({"uri": skill.uri, "frontmatter": skill.frontmatter, "resources": files})
        })
        .collect();
    json!({ "skills": entries })
}

fn contents(uri: &str, path: &str, bytes: Vec<u8>) -> ResourceContents {
    let mime = uris::mime_type(path);
    // Text only when the bytes are UTF-8 as they are: the client hashes what it gets back.
    let text = if uris::textual(mime) && !bytes.contains(&0) {
        String::from_utf8(bytes).map_err(|e| e.into_bytes())
    } else {
        Err(bytes)
    };
    let contents = match text {
        Ok(text) => ResourceContents::text(text, uri),
        Err(bytes) => {
            use base64::Engine;
            ResourceContents::blob(base64::engine::general_purpose::STANDARD.encode(bytes), uri)
        }
    };
    match mime {
        Some(mime) => contents.with_mime_type(mime),
        None => contents,
    }
}

/// Whether a `skill_manage` answer says something landed on disk (not staged, not a read).
fn landed(answer: &str) -> bool {
    serde_json::from_str::<Value>(answer)
        .is_ok_and(|v| matches!(v["status"].as_str(), Some("written" | "archived" | "removed")))
}

/// Whether the request came on 2026-07-28 or later (its `_meta`, else its session's revision).
fn stateless(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version().is_some_and(|v| !v.has_initialize())
}

impl ServerHandler for Server {
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(super::message::SUPPORTED)
    }

    async fn discover(&self, _context: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        Ok(DiscoverResult::from_server_info(self.supported_protocol_versions().into_owned(), self.get_info())
            .with_ttl_ms(FIXED_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // Always acknowledged, with only what the server declares (resources' list-changed;
        // rmcp intersects with the capabilities too): the acknowledgement tells the client what
        // it will hear, possibly nothing.
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let mut changes = self.changes.subscribe();
        loop {
            tokio::select! {
                _ = context.cancelled() => return Ok(()),
                change = changes.recv() => {
                    if let Err(tokio::sync::broadcast::error::RecvError::Closed) = change {
                        return Ok(());
                    }
                    // Lagged: some changes were missed, and one notification says them all.
                    match context.sink().notify_resource_list_changed().await {
                        Ok(()) | Err(SubscriptionSendError::NotificationNotAccepted(_)) => {}
                        Err(_) => return Ok(()),
                    }
                }
            }
        }
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_skills()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("self-evolve", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Skills: list and read them through the Skills Extension (skills/list, skills/get, resources/read). \
                 To save what you learned, call skill_manage (create, patch, edit, write_file, archive): every write is \
                 checked for duplicates, credentials, ownership and reads, and may be staged for the operator's approval.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let list = ListToolsResult::with_all_items(vec![self.tool.clone()]);
        // Hints only on the revision that has them: an older client gets today's answer.
        Ok(match stateless(&context) {
            true => list.with_ttl_ms(FIXED_TTL_MS).with_cache_scope(CacheScope::Public),
            false => list,
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == self.tool.name).then(|| self.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name != self.tool.name {
            return Err(McpError::invalid_params(format!("no tool named `{}`", request.name), None));
        }
        let args = Value::Object(request.arguments.unwrap_or_default()).to_string();
        let ctx = self.ctx_for(&context);
        let answer = self
            .worker
            .call_unless(&context.ct, move |p| p.tools_call(&ctx, "skill_manage", &args))
            .await
            .map_err(internal)?;
        let result = match answer {
            Ok(Ok(text)) => {
                if landed(&text) {
                    if let Some(after) = self.after_landing.clone() {
                        // Off the plugin thread: git may take its time, and other requests go on.
                        let _ = tokio::task::spawn_blocking(move || after()).await;
                    }
                    self.changed();
                    // A 2025 client hears it on its session; a 2026-07-28 one only through the
                    // `subscriptions/listen` it asked for (never unasked). Best effort: a client
                    // that went away does not undo the write.
                    if !stateless(&context) {
                        let _ = context.peer.notify_resource_list_changed().await;
                    }
                }
                CallToolResult::success(vec![ContentBlock::text(text)])
            }
            Ok(Err(refusal)) => CallToolResult::error(vec![ContentBlock::text(refusal)]),
            // The instance trapped (and was replaced): nothing was written that the plugin
            // reported; say so in the plugin's error shape.
            Err(err) => CallToolResult::error(vec![ContentBlock::text(
                json!({"code": "plugin-failed", "message": err.to_string(), "hint": "retry; if it repeats, tell the operator"})
                    .to_string(),
            )]),
        };
        Ok(result.into())
    }

    async fn list_skills(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        let page =
            self.page(self.ctx_for(&context), request.as_ref().and_then(|r| r.cursor.as_deref()), &context.ct).await?;
        let mut result = ListSkillsResult::with_all_items(page.skills.iter().map(entry).collect());
        result.next_cursor = page.next_offset.map(|o| o.to_string());
        Ok(result)
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        let unknown = || McpError::invalid_params(format!("no skill is served at {}", request.uri), None);
        let Some((name, path)) = uris::parse(&request.uri) else { return Err(unknown()) };
        if path != uris::SKILL_MD {
            return Err(unknown());
        }
        match self.skill(self.ctx_for(&context), name, &context.ct).await? {
            Ok(skill) => Ok(GetSkillResult::new(entry(&skill))),
            Err(refusal) => {
                let data: Value = serde_json::from_str(&refusal).unwrap_or_else(|_| json!({"message": refusal}));
                Err(McpError::invalid_params(format!("no skill is served at {}", request.uri), Some(data)))
            }
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let page =
            self.page(self.ctx_for(&context), request.as_ref().and_then(|r| r.cursor.as_deref()), &context.ct).await?;
        let mut resources: Vec<Resource> = Vec::new();
        if request.as_ref().and_then(|r| r.cursor.as_ref()).is_none() {
            resources.push(
                Resource::new(uris::INDEX, "index.json")
                    .with_description("Every served skill with its frontmatter and files (the SEP-2640 drafts' index; skills/list is the current way)")
                    .with_mime_type("application/json"),
            );
        }
        resources.extend(page.skills.iter().map(listing));
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = page.next_offset.map(|o| o.to_string());
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri;
        if uri == uris::INDEX {
            let text = serde_json::to_string_pretty(&index(&self.all(self.ctx_for(&context), &context.ct).await?))
                .map_err(|e| internal(e.into()))?;
            let contents = ResourceContents::text(text, &uri).with_mime_type("application/json");
            return Ok(ReadResourceResult::new(vec![contents]).into());
        }
        let Some((name, path)) = uris::parse(&uri) else {
            return Err(McpError::invalid_params(format!("no resource is served at {uri}"), Some(json!({"uri": uri}))));
        };
        let ctx = self.ctx_for(&context);
        let file = path.clone();
        let answer = self
            .worker
            .call_unless(&context.ct, move |p| p.catalog_read(&ctx, &name, &file))
            .await
            .map_err(internal)?;
        // The refusal names the URI asked for (SEP-2164), beside the plugin's own details.
        let bytes = answer.map_err(|e| internal(anyhow::anyhow!("{e}")))?.map_err(|refusal| {
            let mut error = plugin_refusal(&refusal);
            if let Some(Value::Object(data)) = error.data.as_mut() {
                data.insert("uri".into(), json!(uri));
            }
            error
        })?;
        Ok(ReadResourceResult::new(vec![contents(&uri, &path, bytes)]).into())
    }
}
