//! Definitions of tools, resources, templates and prompts, and the one registry that both lists
//! and routes them.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use base64::Engine as _;
use mcp_jsonrpc::ErrorObject;
use mcp_types::{
    Annotations, CallToolResult, GetPromptResult, Icon, Meta, PromptArgument, ReadResourceResult,
    ToolAnnotations,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::context::{BoxFuture, RequestContext, Resume};
use crate::error::{BuildError, with_data};
use crate::output::{IntoCallToolResult, IntoGetPromptResult, IntoReadResourceResult, Reply};
#[cfg(feature = "tasks")]
use crate::tasks::TaskSupport;
use crate::uri_template::{TemplateVars, UriTemplate};
use crate::validate::CompiledSchema;
use mcp_types::x_mcp_header::{self, ParamHeader};

/// The setters of the listed definition (`def`) that tools, resources, templates and prompts
/// share: description, title and icons.
macro_rules! definition_setters {
    () => {
        /// Sets the description.
        pub fn description(mut self, d: impl Into<String>) -> Self {
            self.def.description = Some(d.into());
            self
        }
        /// Sets the title (2025-06-18 and later).
        pub fn title(mut self, t: impl Into<String>) -> Self {
            self.def.title = Some(t.into());
            self
        }
        /// Adds an icon (2025-11-25 and later).
        pub fn icon(mut self, icon: Icon) -> Self {
            self.def.icons.get_or_insert_with(Vec::new).push(icon);
            self
        }
    };
}

/// A tool to register: its `tools/list` definition, built step by step.
///
/// The input schema is generated from the handler's argument type unless one is set here; the
/// output schema comes from [`Structured`](crate::Structured) outputs unless one is set here.
/// Generated schemas are made when first needed (see
/// [`ServerBuilder::check_schemas_at_build`](crate::ServerBuilder::check_schemas_at_build)).
///
/// ```
/// use mcp_server::Tool;
/// let tool = Tool::new("get_weather").title("Weather").description("Current weather").read_only();
/// assert_eq!(tool.name(), "get_weather");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    def: mcp_types::Tool,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    tasks: TaskPlan,
}

/// How a tool takes part in tasks (the `tasks` feature); nothing without it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct TaskPlan {
    /// Whether the tool runs as a task for clients of the tasks extension.
    #[cfg(feature = "tasks")]
    pub(crate) support: TaskSupport,
    /// The handler starts the task itself (`cx.start_task()`).
    #[cfg(feature = "tasks")]
    pub(crate) deferred: bool,
}

impl TaskPlan {
    /// The plan a definition's `execution.taskSupport` states. Without the `tasks` feature no
    /// call becomes a task, so none is declared.
    fn declared(execution: Option<mcp_types::ToolExecution>) -> Self {
        #[cfg(feature = "tasks")]
        {
            use mcp_types::ToolExecutionTaskSupport as Declared;
            let support = match execution.and_then(|e| e.task_support) {
                Some(Declared::Optional) => TaskSupport::Optional,
                Some(Declared::Required) => TaskSupport::Required,
                Some(Declared::Forbidden) | None => TaskSupport::Forbidden,
            };
            TaskPlan {
                support,
                deferred: false,
            }
        }
        #[cfg(not(feature = "tasks"))]
        {
            let _ = execution;
            TaskPlan::default()
        }
    }

    /// The `execution` member of the tool's definition.
    fn execution(self) -> Option<mcp_types::ToolExecution> {
        #[cfg(feature = "tasks")]
        return crate::tasks::execution(self.support);
        #[cfg(not(feature = "tasks"))]
        None
    }
}

impl Tool {
    definition_setters!();
    /// A tool with a name; its input schema comes from the handler's argument type.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            def: mcp_types::Tool::new(name, Map::new()),
            input_schema: None,
            output_schema: None,
            tasks: TaskPlan::default(),
        }
    }
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.def.name
    }
    /// Sets an explicit input schema (it wins over the generated one).
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = Some(schema);
        self
    }
    /// Sets an explicit output schema (it wins over the one implied by
    /// [`Structured`](crate::Structured)).
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }
    /// Sets the behaviour hints (2025-03-26 and later).
    pub fn annotations(mut self, a: ToolAnnotations) -> Self {
        self.def.annotations = Some(a);
        self
    }
    /// Marks the tool read-only.
    pub fn read_only(mut self) -> Self {
        self.def
            .annotations
            .get_or_insert_with(Default::default)
            .read_only_hint = Some(true);
        self
    }
    /// Sets `_meta`.
    pub fn meta(mut self, meta: Meta) -> Self {
        self.def.meta = Some(meta);
        self
    }
    /// Lets the tool run as a task: when a 2026-07-28 request declares the tasks extension, or
    /// a 2025-11-25 call carries `task` in its params, the call is answered at once with a
    /// task handle and the handler runs on; the client follows it with `tasks/get`. The handler
    /// is the same function for every client: otherwise (and on older revisions) the call runs
    /// to completion as usual. With [`TaskSupport::Required`] a 2026-07-28 request that did
    /// not declare the extension is refused with `-32021`, a 2025-11-25 call without `task`
    /// with `-32601`. 2025-11-25 clients see the level in the tool's `execution.taskSupport`.
    ///
    /// The task starts before the handler runs, unless [`defer_task`](Self::defer_task) leaves
    /// that to the handler.
    ///
    /// ```
    /// use mcp_server::{TaskSupport, Tool};
    /// let tool = Tool::new("render_video")
    ///     .description("Renders a video; takes minutes")
    ///     .task_support(TaskSupport::Optional);
    /// # let _ = tool;
    /// ```
    #[cfg(feature = "tasks")]
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.tasks.support = support;
        self
    }
    /// Lets the handler decide where the task starts: the call is an ordinary one (whose asks
    /// for input are multi round-trip requests) until the handler calls
    /// [`RequestContext::start_task`](crate::RequestContext::start_task), and a task from
    /// there on. A handler that never calls it answers like any tool. Without a
    /// [`task_support`](Self::task_support) level this implies [`TaskSupport::Optional`].
    #[cfg(feature = "tasks")]
    pub fn defer_task(mut self) -> Self {
        self.tasks.deferred = true;
        if self.tasks.support == TaskSupport::Forbidden {
            self.tasks.support = TaskSupport::Optional;
        }
        self
    }
}

impl From<mcp_types::Tool> for Tool {
    /// A complete definition; its schemas are explicit, and its `execution.taskSupport` sets
    /// the tool's task support (2025-11-25 clients see it in `tools/list`); without the `tasks`
    /// feature it is dropped, as no call becomes a task.
    fn from(mut def: mcp_types::Tool) -> Self {
        let input_schema = serde_json::to_value(&def.input_schema).ok();
        let output_schema = def
            .output_schema
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok());
        let tasks = TaskPlan::declared(def.execution.take());
        Self {
            def,
            input_schema,
            output_schema,
            tasks,
        }
    }
}

/// A resource with a fixed URI to register, as listed by `resources/list`.
///
/// ```
/// use mcp_server::Resource;
/// let r = Resource::new("file:///notes.md", "notes").mime_type("text/markdown");
/// assert_eq!(r.definition().uri, "file:///notes.md");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    def: mcp_types::Resource,
}

impl Resource {
    definition_setters!();
    /// A resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            def: mcp_types::Resource {
                meta: None,
                annotations: None,
                description: None,
                icons: None,
                mime_type: None,
                name: name.into(),
                size: None,
                title: None,
                uri: uri.into(),
            },
        }
    }
    /// The definition as listed.
    pub fn definition(&self) -> &mcp_types::Resource {
        &self.def
    }
    /// Sets the MIME type; plain text and bytes returned by the handler carry it.
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.def.mime_type = Some(m.into());
        self
    }
    /// Sets the size in bytes.
    pub fn size(mut self, bytes: i64) -> Self {
        self.def.size = Some(bytes);
        self
    }
    /// Sets the annotations.
    pub fn annotations(mut self, a: Annotations) -> Self {
        self.def.annotations = Some(a);
        self
    }
}

impl From<mcp_types::Resource> for Resource {
    fn from(def: mcp_types::Resource) -> Self {
        Self { def }
    }
}

/// A family of resources described by an RFC 6570 URI template, to register.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceTemplate {
    def: mcp_types::ResourceTemplate,
}

impl ResourceTemplate {
    definition_setters!();
    /// A template with a URI template and a name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            def: mcp_types::ResourceTemplate {
                meta: None,
                annotations: None,
                description: None,
                icons: None,
                mime_type: None,
                name: name.into(),
                title: None,
                uri_template: uri_template.into(),
            },
        }
    }
    /// The definition as listed.
    pub fn definition(&self) -> &mcp_types::ResourceTemplate {
        &self.def
    }
    /// Sets the MIME type of the resources.
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.def.mime_type = Some(m.into());
        self
    }
}

impl From<mcp_types::ResourceTemplate> for ResourceTemplate {
    fn from(def: mcp_types::ResourceTemplate) -> Self {
        Self { def }
    }
}

/// A prompt to register, as listed by `prompts/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    def: mcp_types::Prompt,
}

impl Prompt {
    definition_setters!();
    /// A prompt with a name; its arguments come from the handler's argument type.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            def: mcp_types::Prompt {
                meta: None,
                arguments: None,
                description: None,
                icons: None,
                name: name.into(),
                title: None,
            },
        }
    }
    /// The definition as listed (arguments still unset if they are to be generated).
    pub fn definition(&self) -> &mcp_types::Prompt {
        &self.def
    }
    /// Sets the arguments explicitly.
    pub fn arguments(mut self, args: Vec<PromptArgument>) -> Self {
        self.def.arguments = Some(args);
        self
    }
}

impl From<mcp_types::Prompt> for Prompt {
    fn from(def: mcp_types::Prompt) -> Self {
        Self { def }
    }
}

/// A tool without arguments: use it as the argument type of a handler that takes none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct NoArgs {}

/// A tool call's arguments: the JSON text of the request's `arguments` object (the server's
/// own dispatch; a typed handler deserializes its type straight from it) or an object a
/// [`ServerHandler`](crate::ServerHandler) caller already parsed.
///
/// The text is borrowed from the request where it can be: a handler that runs once decodes
/// its type before its future is made, so nothing is copied. A run that may be replayed keeps
/// [`into_shared`](Self::into_shared) arguments, cheap to clone, decoded again per run.
#[derive(Debug, Clone)]
pub(crate) enum Arguments<'a> {
    /// The text of a JSON object, borrowed.
    Text(&'a str),
    /// The text of a JSON object, shared.
    Shared(Arc<str>),
    /// A parsed object.
    Parsed(Arc<Value>),
}

impl Arguments<'_> {
    fn deserialize<A: DeserializeOwned>(&self) -> Result<A, serde_json::Error> {
        match self {
            Arguments::Text(text) => serde_json::from_str(text),
            Arguments::Shared(text) => serde_json::from_str(text),
            Arguments::Parsed(value) => A::deserialize(&**value),
        }
    }

    /// The arguments as a parsed object (parsed now when they are text).
    fn parsed(&self) -> Result<Arc<Value>, serde_json::Error> {
        match self {
            Arguments::Text(text) => serde_json::from_str(text).map(Arc::new),
            Arguments::Shared(text) => serde_json::from_str(text).map(Arc::new),
            Arguments::Parsed(value) => Ok(Arc::clone(value)),
        }
    }

    /// Arguments that outlive the request's text (copied once if borrowed).
    fn into_shared(self) -> Arguments<'static> {
        match self {
            Arguments::Text(text) => Arguments::Shared(Arc::from(text)),
            Arguments::Shared(text) => Arguments::Shared(text),
            Arguments::Parsed(value) => Arguments::Parsed(value),
        }
    }
}

type ToolFn = dyn for<'a> Fn(
        RequestContext,
        Arguments<'a>,
    ) -> BoxFuture<'static, Result<CallToolResult, ErrorObject>>
    + Send
    + Sync;
type ResourceFn = dyn Fn(RequestContext) -> BoxFuture<'static, Result<ReadResourceResult, ErrorObject>>
    + Send
    + Sync;
type TemplateFn = dyn Fn(RequestContext, TemplateVars) -> BoxFuture<'static, Result<ReadResourceResult, ErrorObject>>
    + Send
    + Sync;
type PromptFn = dyn Fn(
        RequestContext,
        BTreeMap<String, String>,
    ) -> BoxFuture<'static, Result<GetPromptResult, ErrorObject>>
    + Send
    + Sync;
pub(crate) type CompleteFn =
    dyn Fn(String, HashMap<String, String>) -> BoxFuture<'static, Vec<String>> + Send + Sync;

pub(crate) struct ToolEntry {
    /// Its listed definition and compiled schemas (see [`ToolSchemas`]).
    pub(crate) schemas: Arc<ToolSchemas>,
    pub(crate) handler: Arc<ToolFn>,
    /// How it takes part in tasks.
    #[cfg_attr(not(feature = "tasks"), allow(dead_code))]
    pub(crate) tasks: TaskPlan,
}

/// A tool's listed definition and its compiled schemas.
///
/// A schema written by hand is compiled, and refused if broken, when the tool is registered. A
/// schema derived from a Rust type (the handler's argument type, or a structured output's) is
/// generated when first needed: when the tool is listed or called, or when the server is built
/// if [`ServerBuilder::check_schemas_at_build`](crate::ServerBuilder::check_schemas_at_build)
/// asks for it. A server starts without generating any, however many tools it has.
pub(crate) struct ToolSchemas {
    def: mcp_types::Tool,
    input: Part<InputPart, fn() -> Value>,
    output: Part<Option<OutputPart>, fn() -> Option<Value>>,
    ready: OnceLock<Result<ToolDefinition, SchemaError>>,
}

/// A schema written by hand (as registered, then as made), or the function that derives it.
enum Part<T, F> {
    Ready(T),
    Derived(F),
}

/// The input schema: compiled, its `x-mcp-header` parameters, and as listed.
#[derive(Clone)]
struct InputPart {
    compiled: CompiledSchema,
    param_headers: Vec<ParamHeader>,
    listed: mcp_types::ToolInputSchema,
}

/// The output schema: compiled, and as listed.
#[derive(Clone)]
struct OutputPart {
    compiled: CompiledSchema,
    listed: mcp_types::ToolOutputSchema,
}

/// A tool's definition as listed, with its compiled schemas.
pub(crate) struct ToolDefinition {
    pub(crate) tool: mcp_types::Tool,
    pub(crate) input: CompiledSchema,
    /// The parameters the input schema designates for `Mcp-Param-*` headers (`x-mcp-header`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) param_headers: Vec<ParamHeader>,
    pub(crate) output: Option<CompiledSchema>,
}

/// Why a tool's schema is refused: which one, and the reason.
#[derive(Debug, Clone)]
pub(crate) struct SchemaError {
    pub(crate) which: &'static str,
    pub(crate) reason: String,
}

impl SchemaError {
    pub(crate) fn build_error(&self, tool: &str) -> BuildError {
        BuildError::InvalidSchema {
            tool: tool.to_owned(),
            which: self.which,
            reason: self.reason.clone(),
        }
    }
}

/// Compiles `which` of a tool's schemas: one derived from a Rust type is checked at its root
/// now and compiled when first used to validate; one written by hand is compiled now.
fn compile(
    schema: &Value,
    derived: bool,
    which: &'static str,
) -> Result<CompiledSchema, SchemaError> {
    if derived {
        CompiledSchema::deferred(schema.clone())
    } else {
        CompiledSchema::object(schema.clone())
    }
    .map_err(|reason| SchemaError { which, reason })
}

/// A derived schema as listed: what JSON Schema 2020-12 defines (see
/// [`crate::schema::standard_formats`]). The compiled schema keeps schemars' numeric formats,
/// which tell the bounds of an integer type (enforced by the type) from a constraint.
fn listed_form(mut schema: Value, derived: bool) -> Value {
    if derived {
        crate::schema::standard_formats(&mut schema);
    }
    schema
}

impl InputPart {
    fn make(schema: Value, derived: bool) -> Result<Self, SchemaError> {
        let invalid = |reason: String| SchemaError {
            which: "inputSchema",
            reason,
        };
        let compiled = compile(&schema, derived, "inputSchema")?;
        let schema = listed_form(schema, derived);
        let param_headers = match schema.as_object() {
            Some(object) => {
                x_mcp_header::param_headers(object).map_err(|e| invalid(e.to_string()))?
            }
            None => Vec::new(),
        };
        let listed = serde_json::from_value(schema).map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            compiled,
            param_headers,
            listed,
        })
    }
}

impl OutputPart {
    fn make(schema: Value, derived: bool) -> Result<Self, SchemaError> {
        let compiled = compile(&schema, derived, "outputSchema")?;
        let listed =
            serde_json::from_value(listed_form(schema, derived)).map_err(|e| SchemaError {
                which: "outputSchema",
                reason: e.to_string(),
            })?;
        Ok(Self { compiled, listed })
    }
}

impl ToolSchemas {
    /// `input`/`output`: a schema written by hand (made now: an error refuses the tool), or the
    /// function that derives it when first needed.
    fn new(
        def: mcp_types::Tool,
        input: Part<Value, fn() -> Value>,
        output: Part<Value, fn() -> Option<Value>>,
    ) -> Result<Self, SchemaError> {
        let input = match input {
            Part::Ready(schema) => Part::Ready(InputPart::make(schema, false)?),
            Part::Derived(derive) => Part::Derived(derive),
        };
        let output = match output {
            Part::Ready(schema) => Part::Ready(Some(OutputPart::make(schema, false)?)),
            Part::Derived(derive) => Part::Derived(derive),
        };
        let schemas = Self {
            def,
            input,
            output,
            ready: OnceLock::new(),
        };
        if let (Part::Ready(_), Part::Ready(_)) = (&schemas.input, &schemas.output) {
            // Nothing to derive: the definition is made now, as everything it needs is.
            let _ = schemas.definition();
        }
        Ok(schemas)
    }

    /// The definition, made on first use; an error when a derived schema is refused (logged
    /// once, when it is made).
    pub(crate) fn definition(&self) -> Result<&ToolDefinition, &SchemaError> {
        self.ready
            .get_or_init(|| {
                let made = self.make();
                if let Err(e) = &made {
                    tracing::error!(
                        tool = %self.def.name,
                        schema = e.which,
                        reason = %e.reason,
                        "a schema derived from the tool's types is invalid: the tool is not listed and calls to it fail"
                    );
                }
                made
            })
            .as_ref()
    }

    fn make(&self) -> Result<ToolDefinition, SchemaError> {
        let input = match &self.input {
            Part::Ready(part) => part.clone(),
            Part::Derived(derive) => InputPart::make(derive(), true)?,
        };
        let output = match &self.output {
            Part::Ready(part) => part.clone(),
            Part::Derived(derive) => derive()
                .map(|schema| OutputPart::make(schema, true))
                .transpose()?,
        };
        let mut tool = self.def.clone();
        tool.input_schema = input.listed;
        let output = output.map(|part| {
            tool.output_schema = Some(part.listed);
            part.compiled
        });
        if output.is_none() {
            tool.output_schema = None;
        }
        Ok(ToolDefinition {
            tool,
            input: input.compiled,
            param_headers: input.param_headers,
            output,
        })
    }

    /// The input schema, once made (it explains arguments the handler's type refuses).
    fn input(&self) -> Option<&CompiledSchema> {
        self.definition().ok().map(|d| &d.input)
    }
}

pub(crate) struct ResourceEntry {
    pub(crate) resource: mcp_types::Resource,
    pub(crate) handler: Arc<ResourceFn>,
}

pub(crate) struct TemplateEntry {
    pub(crate) template: mcp_types::ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) handler: Arc<TemplateFn>,
}

pub(crate) struct PromptEntry {
    pub(crate) prompt: mcp_types::Prompt,
    pub(crate) handler: Arc<PromptFn>,
}

fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

impl ToolEntry {
    pub(crate) fn new<A, F, Fut, O>(tool: Tool, f: F) -> Result<Self, BuildError>
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoCallToolResult + 'static,
    {
        let input = crate::schema::input_schema_for::<A> as fn() -> Value;
        let (schemas, tasks) = Self::prepare::<O>(tool, Some(input))?;
        // The tool's own input schema explains arguments the type refuses (the validator names
        // the offending field, serde may not).
        let typed = Arc::new((f, Arc::clone(&schemas)));
        let handler: Arc<ToolFn> = Arc::new(
            move |cx: RequestContext,
                  args: Arguments<'_>|
                  -> BoxFuture<'static, Result<CallToolResult, ErrorObject>> {
                if !O::may_ask() && !cx.records_asks() {
                    // One run: the arguments are decoded and the handler called here, and only
                    // its future is boxed; nothing is kept for a replay that cannot happen (no
                    // context, arguments or handler cloned).
                    let (f, schemas) = &*typed;
                    return match decode_arguments::<A>(&args, schemas) {
                        Ok(parsed) => {
                            let run = f(cx, parsed);
                            Box::pin(async move { only_run(run.await.into_tool_reply()) })
                        }
                        Err(invalid) => Box::pin(std::future::ready(Ok(invalid))),
                    };
                }
                let typed = Arc::clone(&typed);
                // Shared by the runs (a stateless request may be replayed) and decoded from the
                // shared text (or by reference): no copy of the argument tree per run.
                let args = args.into_shared();
                Box::pin(until_complete(cx, move |cx| {
                    let typed = Arc::clone(&typed);
                    let args = args.clone();
                    async move {
                        let (f, schemas) = &*typed;
                        match decode_arguments::<A>(&args, schemas) {
                            Ok(parsed) => f(cx, parsed).await.into_tool_reply(),
                            Err(invalid) => Reply::Done(Ok(invalid)),
                        }
                    }
                }))
            },
        );
        Ok(Self::entry(schemas, handler, tasks))
    }

    pub(crate) fn raw<F, Fut, O>(tool: Tool, f: F) -> Result<Self, BuildError>
    where
        F: Fn(RequestContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoCallToolResult + 'static,
    {
        let (schemas, tasks) = Self::prepare::<O>(tool, None)?;
        let f = Arc::new(f);
        let handler: Arc<ToolFn> = Arc::new(move |cx, args: Arguments<'_>| {
            let f = Arc::clone(&f);
            let args = args.parsed();
            Box::pin(until_complete(cx, move |cx| {
                let f = Arc::clone(&f);
                let args = args
                    .as_ref()
                    .map(|a| Value::clone(a))
                    .map_err(|e| e.to_string());
                async move {
                    match args {
                        Ok(args) => f(cx, args).await.into_tool_reply(),
                        Err(e) => Reply::Done(Ok(CallToolResult::error(format!(
                            "invalid arguments: {e}"
                        )))),
                    }
                }
            }))
        });
        Ok(Self::entry(schemas, handler, tasks))
    }

    /// The schemas and task settings of `tool`, its task level set in its definition: the
    /// input schema is the one it sets, else the one `derived_input` makes (a tool with
    /// neither is refused); the output schema the one it sets, else `O`'s.
    fn prepare<O: IntoCallToolResult>(
        tool: Tool,
        derived_input: Option<fn() -> Value>,
    ) -> Result<(Arc<ToolSchemas>, TaskPlan), BuildError> {
        let Tool {
            mut def,
            input_schema,
            output_schema,
            tasks,
        } = tool;
        def.execution = tasks.execution();
        let input = match (input_schema, derived_input) {
            (Some(schema), _) => Part::Ready(schema),
            (None, Some(derive)) => Part::Derived(derive),
            (None, None) => {
                return Err(BuildError::InvalidSchema {
                    tool: def.name,
                    which: "inputSchema",
                    reason: "a raw tool needs an explicit input schema".to_owned(),
                });
            }
        };
        let output =
            output_schema.map_or(Part::Derived(O::output_schema as fn() -> _), Part::Ready);
        let schemas = Self::schemas(def, input, output)?;
        Ok((schemas, tasks))
    }

    /// The tool's schemas: those written by hand made now, the others when first needed.
    fn schemas(
        def: mcp_types::Tool,
        input: Part<Value, fn() -> Value>,
        output: Part<Value, fn() -> Option<Value>>,
    ) -> Result<Arc<ToolSchemas>, BuildError> {
        if !valid_tool_name(&def.name) {
            return Err(BuildError::InvalidToolName(def.name));
        }
        let name = def.name.clone();
        ToolSchemas::new(def, input, output)
            .map(Arc::new)
            .map_err(|e| e.build_error(&name))
    }

    fn entry(schemas: Arc<ToolSchemas>, handler: Arc<ToolFn>, tasks: TaskPlan) -> Self {
        Self {
            schemas,
            handler,
            tasks,
        }
    }

    /// The tool's name (known before its schemas are made).
    pub(crate) fn name(&self) -> &str {
        &self.schemas.def.name
    }

    /// The tool's definition as listed; `None` when a derived schema of it is refused.
    pub(crate) fn listed(&self) -> Option<&mcp_types::Tool> {
        self.schemas.definition().ok().map(|d| &d.tool)
    }

    /// On a stateless HTTP request, the `Mcp-Param-*` headers must mirror the designated
    /// arguments exactly: present with the argument's text when it has a value, absent when it
    /// is absent or `null`. A mismatch is `-32020` (HTTP 400).
    #[cfg(feature = "http")]
    fn check_param_headers(
        definition: &ToolDefinition,
        cx: &RequestContext,
        args: &Value,
    ) -> Result<(), ErrorObject> {
        use mcp_transport_http::server::McpParamHeaders;
        let Some(headers) = cx.extensions().get::<McpParamHeaders>() else {
            return Ok(());
        };
        let empty = serde_json::Map::new();
        let args = args.as_object().unwrap_or(&empty);
        for param in &definition.param_headers {
            let expected = param.value_in(args).and_then(x_mcp_header::header_text);
            let sent = headers.get(&param.name);
            if expected.as_deref() != sent {
                let detail = match (&expected, sent) {
                    (Some(_), None) => "is missing".to_owned(),
                    (None, Some(_)) => "is sent for an argument without a value".to_owned(),
                    _ => "does not match the argument".to_owned(),
                };
                return Err(ErrorObject::new(
                    mcp_types::error_codes::HEADER_MISMATCH,
                    format!("header {} {detail}", param.header_name()),
                ));
            }
        }
        Ok(())
    }

    /// Validates, runs and checks one call.
    ///
    /// The arguments are parsed into a tree only when something needs one: a schema that says
    /// more than the handler's type enforces, `Mcp-Param-*` headers to compare, or a handler
    /// that takes a [`Value`].
    pub(crate) async fn call(
        &self,
        cx: RequestContext,
        args: Arguments<'_>,
    ) -> Result<CallToolResult, ErrorObject> {
        let definition = self.schemas.definition().map_err(|e| {
            ErrorObject::internal_error(format!(
                "tool {} cannot be called: its {} is invalid",
                self.name(),
                e.which
            ))
        })?;
        let check = definition.input.needs_check();
        #[cfg(feature = "http")]
        let headers = !definition.param_headers.is_empty();
        #[cfg(not(feature = "http"))]
        let headers = false;
        let args = if check || headers {
            let value = match args.parsed() {
                Ok(value) => value,
                Err(e) => {
                    return Ok(CallToolResult::error(format!(
                        "invalid arguments for tool {}: {e}",
                        self.name()
                    )));
                }
            };
            #[cfg(feature = "http")]
            Self::check_param_headers(definition, &cx, &value)?;
            if let Err(e) = definition.input.check_if_needed(&value) {
                // Input validation errors are tool execution errors, so the model can correct
                // them.
                return Ok(CallToolResult::error(format!(
                    "invalid arguments for tool {}: {e}",
                    self.name()
                )));
            }
            Arguments::Parsed(value)
        } else {
            args
        };
        #[cfg(feature = "tasks")]
        if self.tasks.support != TaskSupport::Forbidden && !self.tasks.deferred {
            // Becomes a task here when the request can have one; otherwise runs on as is.
            cx.start_task().await;
        }
        let result = (self.handler)(cx, args).await?;
        if result.is_error != Some(true) {
            if let Some(out) = &definition.output {
                let Some(structured) = &result.structured_content else {
                    return Err(ErrorObject::internal_error(format!(
                        "tool {} declares an output schema but returned no structured content",
                        self.name()
                    )));
                };
                // Not checked when it was serialized from the type the schema was derived from.
                if let Err(e) = out.check_if_needed(structured) {
                    tracing::error!(tool = %self.name(), error = %e, "structured content does not match the output schema");
                    return Err(ErrorObject::internal_error(format!(
                        "tool {} produced output that does not match its output schema",
                        self.name()
                    )));
                }
            }
        }
        Ok(result)
    }
}

impl ResourceEntry {
    pub(crate) fn new<F, Fut, O>(resource: Resource, f: F) -> Self
    where
        F: Fn(RequestContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoReadResourceResult + 'static,
    {
        let resource = resource.def;
        let uri: Arc<str> = Arc::from(resource.uri.as_str());
        let mime: Option<Arc<str>> = resource.mime_type.as_deref().map(Arc::from);
        let f = Arc::new(f);
        let handler: Arc<ResourceFn> = Arc::new(move |cx| {
            let f = Arc::clone(&f);
            let uri = Arc::clone(&uri);
            let mime = mime.clone();
            Box::pin(until_complete(cx, move |cx| {
                let f = Arc::clone(&f);
                let uri = Arc::clone(&uri);
                let mime = mime.clone();
                async move { f(cx).await.into_resource_reply(&uri, mime.as_deref()) }
            }))
        });
        Self { resource, handler }
    }
}

impl TemplateEntry {
    pub(crate) fn new<A, F, Fut, O>(template: ResourceTemplate, f: F) -> Result<Self, BuildError>
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoReadResourceResult + 'static,
    {
        let template = template.def;
        let parsed = UriTemplate::parse(&template.uri_template).map_err(|e| {
            BuildError::InvalidTemplate {
                template: template.uri_template.clone(),
                reason: e.to_string(),
            }
        })?;
        let mime: Option<Arc<str>> = template.mime_type.as_deref().map(Arc::from);
        let f = Arc::new(f);
        let handler: Arc<TemplateFn> = Arc::new(move |cx, vars| {
            let f = Arc::clone(&f);
            let mime = mime.clone();
            let vars = vars.to_json();
            Box::pin(until_complete(cx, move |cx| {
                let f = Arc::clone(&f);
                let mime = mime.clone();
                let vars = vars.clone();
                async move {
                    let uri = cx.uri().unwrap_or_default().to_owned();
                    let args: A = match serde_json::from_value(vars) {
                        Ok(a) => a,
                        Err(e) => {
                            return Reply::Done(Err(with_data(
                                ErrorObject::invalid_params(format!("invalid URI {uri}: {e}")),
                                &serde_json::json!({"uri": uri}),
                            )));
                        }
                    };
                    f(cx, args).await.into_resource_reply(&uri, mime.as_deref())
                }
            }))
        });
        Ok(Self {
            template,
            parsed,
            handler,
        })
    }
}

/// The names an object schema's `required` lists.
fn required_names(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn prompt_arguments_from_schema(schema: &Value, declared: Option<&[&str]>) -> Vec<PromptArgument> {
    let required = required_names(schema);
    let Some(Value::Object(props)) = schema.get("properties") else {
        return Vec::new();
    };
    crate::schema::property_order(schema, declared)
        .into_iter()
        .filter_map(|name| {
            let prop = props.get(&name)?;
            Some(PromptArgument {
                title: prop.get("title").and_then(Value::as_str).map(str::to_owned),
                description: prop
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: Some(required.contains(&name.as_str())),
                name,
            })
        })
        .collect()
}

/// What a prompt argument's type takes, read from the derived schema of the handler's
/// argument type. The protocol sends every prompt argument as a string; this says how to turn
/// that string into the JSON value the type deserializes from.
#[derive(Debug, Clone, PartialEq)]
enum ArgForm {
    /// A string (or anything the schema does not pin down): passed as the string.
    Text,
    /// An integer, within the bounds of its type and of any `minimum`/`maximum`.
    Integer { min: Option<f64>, max: Option<f64> },
    /// Any finite number.
    Number,
    /// `true` or `false` (in any case).
    Boolean,
    /// One of these strings (a unit-only enum).
    Choice(Vec<String>),
    /// Another kind of value (an array, an object, an enum of non-strings): the string is read
    /// as JSON, else passed as a string.
    Json,
}

impl ArgForm {
    /// The form of one property schema; `root` resolves `$ref`s into `$defs`.
    fn of(prop: &Value, root: &Value, depth: usize) -> Self {
        if depth > 8 {
            return Self::Text;
        }
        if let Some(target) = prop.get("$ref").and_then(Value::as_str) {
            let resolved = target
                .strip_prefix('#')
                .and_then(|pointer| root.pointer(pointer));
            return resolved.map_or(Self::Text, |schema| Self::of(schema, root, depth + 1));
        }
        // `Option<T>` and titled enums: alternatives, `null` aside.
        for keyword in ["anyOf", "oneOf"] {
            if let Some(alts) = prop.get(keyword).and_then(Value::as_array) {
                let alts: Vec<&Value> = alts.iter().filter(|a| !is_null_schema(a)).collect();
                let consts: Option<Vec<String>> = alts
                    .iter()
                    .map(|a| a.get("const").and_then(Value::as_str).map(str::to_owned))
                    .collect();
                return match (consts, alts.as_slice()) {
                    (Some(choices), _) if !choices.is_empty() => Self::Choice(choices),
                    (_, [only]) => Self::of(only, root, depth + 1),
                    _ => Self::Json,
                };
            }
        }
        if let Some(values) = prop.get("enum").and_then(Value::as_array) {
            let choices: Option<Vec<String>> = values
                .iter()
                .filter(|v| !v.is_null())
                .map(|v| v.as_str().map(str::to_owned))
                .collect();
            return choices.map_or(Self::Json, Self::Choice);
        }
        let types: Vec<&str> = match prop.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
        match types.as_slice() {
            [] => Self::Text,
            ts if ts.contains(&"string") => Self::Text,
            ["integer"] => {
                let (type_min, type_max) = prop
                    .get("format")
                    .and_then(Value::as_str)
                    .map_or((None, None), integer_format_bounds);
                let stated = |key: &str| prop.get(key).and_then(Value::as_f64);
                Self::Integer {
                    min: tighter(stated("minimum"), type_min, f64::max),
                    max: tighter(stated("maximum"), type_max, f64::min),
                }
            }
            ["number"] | ["integer", "number"] | ["number", "integer"] => Self::Number,
            ["boolean"] => Self::Boolean,
            _ => Self::Json,
        }
    }

    /// The JSON value for `text`, or what the argument expects.
    fn parse(&self, text: &str) -> Result<Value, String> {
        let trimmed = text.trim();
        match self {
            Self::Text => Ok(Value::String(text.to_owned())),
            Self::Integer { min, max } => {
                let range = match (min, max) {
                    (Some(min), Some(max)) => format!(" from {min} to {max}"),
                    (Some(min), None) => format!(" of at least {min}"),
                    (None, Some(max)) => format!(" of at most {max}"),
                    (None, None) => String::new(),
                };
                let expected = || format!("an integer{range}");
                let number = trimmed
                    .parse::<i64>()
                    .map(Value::from)
                    .or_else(|_| trimmed.parse::<u64>().map(Value::from))
                    .map_err(|_| expected())?;
                let as_f64 = number.as_f64().unwrap_or(f64::NAN);
                if min.is_some_and(|m| as_f64 < m) || max.is_some_and(|m| as_f64 > m) {
                    return Err(expected());
                }
                Ok(number)
            }
            Self::Number => serde_json::from_str::<serde_json::Number>(trimmed)
                .ok()
                .or_else(|| {
                    let n = trimmed.parse::<f64>().ok()?;
                    serde_json::Number::from_f64(n)
                })
                .map(Value::Number)
                .ok_or_else(|| "a number".to_owned()),
            Self::Boolean => match trimmed.to_ascii_lowercase().as_str() {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err("`true` or `false`".to_owned()),
            },
            Self::Choice(choices) => {
                if choices.iter().any(|c| c == text) {
                    Ok(Value::String(text.to_owned()))
                } else {
                    let list: Vec<String> = choices.iter().map(|c| format!("`{c}`")).collect();
                    Err(format!("one of {}", list.join(", ")))
                }
            }
            Self::Json => Ok(
                serde_json::from_str(trimmed).unwrap_or_else(|_| Value::String(text.to_owned()))
            ),
        }
    }
}

/// The tighter of a stated bound and a type's own.
fn tighter(stated: Option<f64>, own: Option<f64>, pick: fn(f64, f64) -> f64) -> Option<f64> {
    match (stated, own) {
        (Some(a), Some(b)) => Some(pick(a, b)),
        (a, b) => a.or(b),
    }
}

/// The range of the integer type a schemars `format` names, as far as a double holds it.
fn integer_format_bounds(format: &str) -> (Option<f64>, Option<f64>) {
    match format {
        "uint8" => (Some(0.0), Some(f64::from(u8::MAX))),
        "uint16" => (Some(0.0), Some(f64::from(u16::MAX))),
        "uint32" => (Some(0.0), Some(f64::from(u32::MAX))),
        "uint64" | "uint128" | "uint" => (Some(0.0), None),
        "int8" => (Some(f64::from(i8::MIN)), Some(f64::from(i8::MAX))),
        "int16" => (Some(f64::from(i16::MIN)), Some(f64::from(i16::MAX))),
        "int32" => (Some(f64::from(i32::MIN)), Some(f64::from(i32::MAX))),
        _ => (None, None),
    }
}

/// Whether a schema admits only `null`.
fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("const").is_some_and(Value::is_null)
}

/// How each argument of a prompt is read from its string form.
#[derive(Debug, Default)]
struct PromptArgForms {
    forms: HashMap<String, ArgForm>,
    required: Vec<String>,
}

impl PromptArgForms {
    fn from_schema(schema: &Value) -> Self {
        let required = required_names(schema)
            .into_iter()
            .map(str::to_owned)
            .collect();
        let forms = match schema.get("properties") {
            Some(Value::Object(props)) => props
                .iter()
                .map(|(name, prop)| (name.clone(), ArgForm::of(prop, schema, 0)))
                .collect(),
            _ => HashMap::new(),
        };
        Self { forms, required }
    }

    /// The arguments as the JSON object the handler's type deserializes from; an error names
    /// the first argument whose string does not parse, and what it should be. An empty string
    /// for an optional argument that is not a string is taken as leaving it out (as a form
    /// left blank sends it).
    fn to_json(&self, args: BTreeMap<String, String>) -> Result<Map<String, Value>, ErrorObject> {
        let mut out = Map::new();
        for (name, text) in &args {
            let form = self.forms.get(name).unwrap_or(&ArgForm::Text);
            if *form != ArgForm::Text && text.trim().is_empty() && !self.required.contains(name) {
                continue;
            }
            let value = form.parse(text).map_err(|expected| {
                ErrorObject::invalid_params(format!(
                    "invalid prompt argument `{name}`: expected {expected}, got {text:?}"
                ))
            })?;
            out.insert(name.clone(), value);
        }
        Ok(out)
    }
}

impl PromptEntry {
    pub(crate) fn new<A, F, Fut, O>(prompt: Prompt, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(RequestContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = O> + Send + 'static,
        O: IntoGetPromptResult + 'static,
    {
        let mut prompt = prompt.def;
        let schema = crate::schema::input_schema_for::<A>();
        if prompt.arguments.is_none() {
            let declared = crate::schema::declared_fields::<A>();
            let args = prompt_arguments_from_schema(&schema, declared);
            prompt.arguments = (!args.is_empty()).then_some(args);
        }
        let forms = PromptArgForms::from_schema(&schema);
        let required: Vec<String> = prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true))
            .map(|a| a.name.clone())
            .collect();
        let f = Arc::new(f);
        let handler: Arc<PromptFn> = Arc::new(move |cx, args| {
            let f = Arc::clone(&f);
            let missing: Vec<String> = required
                .iter()
                .filter(|r| !args.contains_key(*r))
                .cloned()
                .collect();
            if !missing.is_empty() {
                return Box::pin(std::future::ready(Err(ErrorObject::invalid_params(
                    format!("missing required prompt arguments: {}", missing.join(", ")),
                ))));
            }
            // Prompt arguments are strings on the wire: read each as its type's JSON form.
            let args = match forms.to_json(args) {
                Ok(args) => Value::Object(args),
                Err(e) => return Box::pin(std::future::ready(Err(e))),
            };
            Box::pin(until_complete(cx, move |cx| {
                let f = Arc::clone(&f);
                let args = args.clone();
                async move {
                    let args: A = match serde_json::from_value(args) {
                        Ok(a) => a,
                        Err(e) => {
                            return Reply::Done(Err(ErrorObject::invalid_params(format!(
                                "invalid prompt arguments: {e}"
                            ))));
                        }
                    };
                    f(cx, args).await.into_prompt_reply()
                }
            }))
        });
        Self { prompt, handler }
    }
}

/// Decodes a typed tool's arguments. Arguments the type refuses are a tool error (the model can
/// correct them), explained by the entry's input schema when it names the offending field
/// (serde may not).
fn decode_arguments<A: DeserializeOwned>(
    args: &Arguments<'_>,
    schemas: &ToolSchemas,
) -> Result<A, CallToolResult> {
    args.deserialize().map_err(|e| {
        let report = args
            .parsed()
            .ok()
            .and_then(|v| schemas.input().and_then(|input| input.check(&v).err()));
        CallToolResult::error(format!(
            "invalid arguments: {}",
            report.unwrap_or_else(|| e.to_string())
        ))
    })
}

/// The outcome of a tool's only run: its output type cannot ask (`may_ask`), so an ask can only
/// come from an output type that misstates it, and is an internal error.
fn only_run(reply: Reply<CallToolResult>) -> Result<CallToolResult, ErrorObject> {
    match reply {
        Reply::Done(result) => result,
        Reply::InputRequired(_) => Err(ErrorObject::internal_error(
            "the tool asked for input, but its output type says it cannot",
        )),
    }
}

/// Runs a handler until it completes. Each [`InputRequired`](crate::InputRequired) it returns
/// goes to the request's channel: a session asks the client and the handler runs again with the
/// answers; a stateless request records it and ends (it answers `input_required`, and the
/// placeholder error returned here is never sent).
///
/// A run's future is held in place (not boxed): one allocation less per call.
async fn until_complete<T, F, Fut>(cx: RequestContext, mut run: F) -> Result<T, ErrorObject>
where
    F: FnMut(RequestContext) -> Fut + Send,
    Fut: Future<Output = Reply<T>> + Send,
{
    loop {
        let reply = match run(cx.clone()).await {
            // Replay mode: the run stopped at asks that were recorded instead of sent.
            Reply::Done(result) => match cx.take_pending() {
                Some(ask) => Reply::InputRequired(ask),
                None => return result,
            },
            ask => ask,
        };
        match reply {
            Reply::Done(result) => return result,
            Reply::InputRequired(ask) => match cx.provide_input(ask).await? {
                Resume::Replay => {}
                Resume::Stop => {
                    return Err(ErrorObject::internal_error(
                        "the request is waiting for client input",
                    ));
                }
            },
        }
    }
}

/// Which list changed (for `notifications/*/list_changed`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ServerEvent {
    ToolsChanged,
    ResourcesChanged,
    PromptsChanged,
    ResourceUpdated(String),
}

/// An immutable view of everything registered; replaced whole on every change.
#[derive(Default, Clone)]
pub(crate) struct Snapshot {
    pub(crate) tools: Vec<Arc<ToolEntry>>,
    pub(crate) resources: Vec<Arc<ResourceEntry>>,
    pub(crate) templates: Vec<Arc<TemplateEntry>>,
    pub(crate) prompts: Vec<Arc<PromptEntry>>,
    pub(crate) prompt_completions: HashMap<(String, String), Arc<CompleteFn>>,
    pub(crate) template_completions: HashMap<(String, String), Arc<CompleteFn>>,
}

impl Snapshot {
    pub(crate) fn tool(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.tools.iter().find(|t| t.name() == name)
    }
    pub(crate) fn resource(&self, uri: &str) -> Option<&Arc<ResourceEntry>> {
        self.resources.iter().find(|r| r.resource.uri == uri)
    }
    pub(crate) fn prompt(&self, name: &str) -> Option<&Arc<PromptEntry>> {
        self.prompts.iter().find(|p| p.prompt.name == name)
    }
    pub(crate) fn match_template(&self, uri: &str) -> Option<(&Arc<TemplateEntry>, TemplateVars)> {
        self.templates
            .iter()
            .find_map(|t| t.parsed.matches(uri).map(|vars| (t, vars)))
    }

    pub(crate) fn add_tool(&mut self, entry: ToolEntry) -> Result<(), BuildError> {
        add_unique(&mut self.tools, entry, "tool", ToolEntry::name)
    }
    pub(crate) fn add_resource(&mut self, entry: ResourceEntry) -> Result<(), BuildError> {
        add_unique(&mut self.resources, entry, "resource", |e| &e.resource.uri)
    }
    pub(crate) fn add_template(&mut self, entry: TemplateEntry) -> Result<(), BuildError> {
        add_unique(&mut self.templates, entry, "resource template", |e| {
            &e.template.uri_template
        })
    }
    pub(crate) fn add_prompt(&mut self, entry: PromptEntry) -> Result<(), BuildError> {
        add_unique(&mut self.prompts, entry, "prompt", |e| &e.prompt.name)
    }
}

/// Adds `entry` to `list` unless an entry there has the same `key`, which is a
/// [`BuildError::Duplicate`] of `kind`.
fn add_unique<T>(
    list: &mut Vec<Arc<T>>,
    entry: T,
    kind: &'static str,
    key: impl Fn(&T) -> &str,
) -> Result<(), BuildError> {
    if list.iter().any(|e| key(e) == key(&entry)) {
        return Err(BuildError::Duplicate {
            kind,
            name: key(&entry).to_owned(),
        });
    }
    list.push(Arc::new(entry));
    Ok(())
}

pub(crate) fn completer<F, Fut>(f: F) -> Arc<CompleteFn>
where
    F: Fn(String, HashMap<String, String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<String>> + Send + 'static,
{
    Arc::new(move |value, context| Box::pin(f(value, context)))
}

/// The live registry: readers take a cheap `Arc` snapshot, writers replace it.
pub(crate) struct Registry {
    /// The snapshot the server was built with: read with no lock and no reference counted
    /// until the first change.
    built: Arc<Snapshot>,
    /// Set before the first change is published: from then on `current` is read.
    changed: AtomicBool,
    current: RwLock<Arc<Snapshot>>,
    events: tokio::sync::broadcast::Sender<ServerEvent>,
    /// Where changes go for the other replicas of the server.
    bus: Option<Arc<dyn crate::bus::ChangeBus>>,
}

/// A tool entry found by [`Registry::tool`]: borrowed from the snapshot the server was built
/// with, or shared with a later one.
pub(crate) enum ToolRef<'a> {
    Built(&'a ToolEntry),
    Shared(Arc<ToolEntry>),
}

impl std::ops::Deref for ToolRef<'_> {
    type Target = ToolEntry;

    fn deref(&self) -> &ToolEntry {
        match self {
            ToolRef::Built(entry) => entry,
            ToolRef::Shared(entry) => entry,
        }
    }
}

impl Registry {
    pub(crate) fn new(snapshot: Snapshot, event_capacity: usize) -> Self {
        let (events, _) = tokio::sync::broadcast::channel(event_capacity);
        let built = Arc::new(snapshot);
        Self {
            current: RwLock::new(Arc::clone(&built)),
            built,
            changed: AtomicBool::new(false),
            events,
            bus: None,
        }
    }

    /// Publishes every change on `bus` too.
    pub(crate) fn with_bus(mut self, bus: Option<Arc<dyn crate::bus::ChangeBus>>) -> Self {
        self.bus = bus;
        self
    }

    /// A change another replica published: announced here only.
    pub(crate) fn deliver_remote(&self, change: crate::bus::ServerChange) {
        use crate::bus::ServerChange as C;
        let event = match change {
            C::ToolsListChanged => ServerEvent::ToolsChanged,
            C::ResourcesListChanged => ServerEvent::ResourcesChanged,
            C::PromptsListChanged => ServerEvent::PromptsChanged,
            C::ResourceUpdated(uri) => ServerEvent::ResourceUpdated(uri),
        };
        let _ = self.events.send(event);
    }

    fn forward(&self, event: &ServerEvent) {
        use crate::bus::ServerChange as C;
        let Some(bus) = &self.bus else {
            return;
        };
        bus.publish(match event {
            ServerEvent::ToolsChanged => C::ToolsListChanged,
            ServerEvent::ResourcesChanged => C::ResourcesListChanged,
            ServerEvent::PromptsChanged => C::PromptsListChanged,
            ServerEvent::ResourceUpdated(uri) => C::ResourceUpdated(uri.clone()),
        });
    }

    /// The tool called `name`; an unknown name is `-32602`.
    ///
    /// Until the registry first changes (most servers never change theirs), the tool is
    /// borrowed from the snapshot the server was built with: no lock word and no reference
    /// count shared by every request is written, so requests on other threads do not contend.
    /// After a change it is looked up under the read lock (the snapshot itself is not cloned).
    pub(crate) fn tool(&self, name: &str) -> Result<ToolRef<'_>, ErrorObject> {
        let found = if self.changed.load(Ordering::Acquire) {
            let current = self.current.read().unwrap_or_else(PoisonError::into_inner);
            current.tool(name).cloned().map(ToolRef::Shared)
        } else {
            self.built.tool(name).map(|entry| ToolRef::Built(entry))
        };
        found.ok_or_else(|| ErrorObject::invalid_params(format!("unknown tool: {name}")))
    }

    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Applies a change to a copy of the snapshot and publishes it; `event` goes to every session.
    pub(crate) fn update<R>(
        &self,
        event: Option<ServerEvent>,
        change: impl FnOnce(&mut Snapshot) -> R,
    ) -> R {
        // Before the new snapshot is published: a lookup that still reads `built` is one that
        // happened before the change.
        self.changed.store(true, Ordering::Release);
        let result = {
            let mut guard = match self.current.write() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            let mut next = Snapshot::clone(&guard);
            let r = change(&mut next);
            *guard = Arc::new(next);
            r
        };
        if let Some(event) = event {
            self.forward(&event);
            // No receiver (no session yet) is fine.
            let _ = self.events.send(event);
        }
        result
    }

    pub(crate) fn publish(&self, event: ServerEvent) {
        self.forward(&event);
        let _ = self.events.send(event);
    }

    pub(crate) fn subscribe(&self) -> tokio::sync::broadcast::Receiver<ServerEvent> {
        self.events.subscribe()
    }
}

/// Opaque pagination cursors: the offset of the next page, base64url-encoded with a version tag.
pub(crate) fn encode_cursor(offset: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("mcp1:{offset}"))
}

pub(crate) fn decode_cursor(cursor: Option<&str>) -> Result<usize, ErrorObject> {
    let Some(cursor) = cursor else {
        return Ok(0);
    };
    let bad = || ErrorObject::invalid_params(format!("invalid cursor {cursor:?}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| bad())?;
    let text = std::str::from_utf8(&bytes).map_err(|_| bad())?;
    text.strip_prefix("mcp1:")
        .and_then(|n| n.parse().ok())
        .ok_or_else(bad)
}

/// One page of `items` starting at `cursor`, plus the next cursor.
pub(crate) fn page<T: Clone>(
    items: &[T],
    cursor: Option<&str>,
    page_size: usize,
) -> Result<(Vec<T>, Option<String>), ErrorObject> {
    let start = decode_cursor(cursor)?;
    if start > items.len() {
        return Err(ErrorObject::invalid_params(
            "cursor is past the end of the list",
        ));
    }
    let end = start.saturating_add(page_size).min(items.len());
    let next = (end < items.len()).then(|| encode_cursor(end));
    Ok((items[start..end].to_vec(), next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let items: Vec<u32> = (0..5).collect();
        let (p1, c1) = page(&items, None, 2).unwrap();
        assert_eq!(p1, vec![0, 1]);
        let (p2, c2) = page(&items, c1.as_deref(), 2).unwrap();
        assert_eq!(p2, vec![2, 3]);
        let (p3, c3) = page(&items, c2.as_deref(), 2).unwrap();
        assert_eq!(p3, vec![4]);
        assert!(c3.is_none());
        assert_eq!(page(&items, Some("nope"), 2).unwrap_err().code, -32602);
        assert_eq!(
            page(&items, Some(&encode_cursor(99)), 2).unwrap_err().code,
            -32602
        );
    }

    #[cfg(feature = "tasks")]
    #[test]
    fn a_definition_declares_its_task_support() {
        let def: mcp_types::Tool = serde_json::from_value(serde_json::json!({
            "name": "render",
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"},
        }))
        .unwrap();
        let tool = Tool::from(def);
        assert_eq!(tool.tasks.support, TaskSupport::Required);
        assert!(tool.def.execution.is_none());
        let plain = Tool::from(mcp_types::Tool::new("plain", Map::new()));
        assert_eq!(plain.tasks.support, TaskSupport::Forbidden);
    }

    #[test]
    fn an_ask_from_an_output_that_cannot_ask_is_an_internal_error() {
        let done = only_run(Reply::Done(Ok(CallToolResult::text("ok")))).unwrap();
        assert_eq!(done, CallToolResult::text("ok"));
        let err = only_run(Reply::InputRequired(crate::InputRequired::new())).unwrap_err();
        assert_eq!(err.code, mcp_types::error_codes::INTERNAL_ERROR);
    }

    #[test]
    fn tool_names_are_checked() {
        assert!(valid_tool_name("get_weather.v2-x"));
        assert!(!valid_tool_name(""));
        assert!(!valid_tool_name("has space"));
        assert!(!valid_tool_name(&"a".repeat(129)));
    }

    #[test]
    fn prompt_arguments_come_from_the_schema() {
        #[allow(dead_code)]
        #[derive(Deserialize, JsonSchema)]
        struct A {
            /// The first
            arg1: String,
            arg2: Option<String>,
        }
        let args = prompt_arguments_from_schema(&crate::schema::input_schema_for::<A>(), None);
        assert_eq!(args.len(), 2);
        assert_eq!(args[0].name, "arg1");
        assert_eq!(args[0].required, Some(true));
        assert_eq!(args[0].description.as_deref(), Some("The first"));
        assert_eq!(args[1].required, Some(false));
    }
}
