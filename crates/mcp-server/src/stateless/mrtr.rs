//! The bookkeeping of one multi round-trip request (2026-07-28, SEP-2322).
//!
//! A handler that needs client input either asks through its context
//! (`cx.elicit(..).await?`, `cx.sample`, `cx.roots`) or returns an [`InputRequired`]. Under the
//! stateless revision nothing waits on the server: an [`Exchange`] answers each ask from the
//! request's `inputResponses` or from the answers carried in the sealed `requestState`, records
//! the asks it cannot answer, and when the handler is done turns the run into a [`Verdict`]:
//! the handler's own result, an `input_required` result with every recorded ask and a freshly
//! sealed state, or a JSON-RPC error (malformed answers, undeclared capabilities).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use mcp_types::wire::{self, InputKind, RetryInput};
use mcp_types::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, InputResponse, RpcError,
    error_codes,
};
use serde_json::Value;

use super::seal::{Binding, RequestStateSealer, SealedState};
pub(crate) use crate::input::InputRequired;

/// Limits of multi round-trip requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MrtrLimits {
    /// Rounds of `input_required` one request may go through before it is refused.
    pub(crate) max_rounds: u16,
    /// Distinct asks one run of a handler may record.
    pub(crate) max_asks: usize,
}

impl Default for MrtrLimits {
    fn default() -> Self {
        Self {
            max_rounds: 16,
            max_asks: 32,
        }
    }
}

/// How an ask was resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ask {
    /// The client answered (in `inputResponses` or an earlier round).
    Answered(Box<InputResponse>),
    /// Not answered yet: recorded, the request will answer `input_required`.
    Pending,
    /// The request's `clientCapabilities` do not declare this kind of input.
    MissingCapability(InputKind),
    /// The answer does not have the shape of the request's kind; the request will fail with
    /// `-32602`.
    Invalid(String),
}

/// How the handler's run ended, as far as the exchange cares.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HandlerOutcome {
    /// A result (`isError` results count as failures, see [`Failed`](Self::Failed)).
    Succeeded,
    /// An error, or an `isError` result.
    Failed,
    /// The handler returned an explicit [`InputRequired`].
    InputRequired(InputRequired),
}

/// What the request answers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verdict {
    /// The handler's own result.
    Complete,
    /// `input_required`, with every recorded ask and a sealed `requestState`.
    InputRequired(InputRequiredResult),
    /// A JSON-RPC error instead of whatever the handler produced.
    Error(RpcError),
}

#[derive(Debug, Default)]
struct Run {
    asks: InputRequests,
    used: BTreeMap<String, Value>,
    /// Capabilities asked for and not declared, as paths (`sampling`, `elicitation.url`).
    missing: BTreeSet<&'static str>,
    invalid: Option<String>,
    overflow: bool,
    /// An [`InputRequired`] the handler returned (explicit layer).
    explicit: Option<InputRequired>,
    /// The declared field order of the forms asked for, by key: the model's form schema keeps
    /// its properties sorted, so the result is written in this order afterwards.
    form_orders: BTreeMap<String, Vec<String>>,
}

/// One multi round-trip request: the answers it arrived with and the asks of the current run.
#[derive(Debug)]
pub(crate) struct Exchange {
    binding: Binding,
    capabilities: ClientCapabilities,
    limits: MrtrLimits,
    responses: BTreeMap<String, Value>,
    carried: BTreeMap<String, Value>,
    asked: BTreeMap<String, InputKind>,
    state: Option<Value>,
    round: u16,
    run: Mutex<Run>,
}

/// The capabilities named by paths (`sampling`, `elicitation.url`), as a client would declare
/// them: `{"sampling": {}, "elicitation": {"url": {}}}`.
fn required_capabilities(paths: &BTreeSet<&'static str>) -> ClientCapabilities {
    let mut root = serde_json::Map::new();
    for path in paths {
        let mut node = &mut root;
        for part in path.split('.') {
            let entry = node
                .entry(part)
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            let Value::Object(next) = entry else {
                break;
            };
            node = next;
        }
    }
    // Read from text, as client capabilities are everywhere else (one deserializer for the
    // whole capabilities tree in the crate, not a second one from `Value`).
    serde_json::from_str(&Value::Object(root).to_string()).unwrap_or_default()
}

fn invalid_params(message: impl Into<String>) -> RpcError {
    RpcError {
        code: error_codes::INVALID_PARAMS,
        message: message.into(),
        data: None,
    }
}

fn internal(message: impl Into<String>) -> RpcError {
    RpcError {
        code: error_codes::INTERNAL_ERROR,
        message: message.into(),
        data: None,
    }
}

impl Exchange {
    /// Starts a run from what the client sent: opens `requestState` (a state that does not
    /// open is `-32602`) and checks each answer to an ask of the previous round against the
    /// kind of that ask (`-32602` on a mismatch). Answers to keys nobody asked are ignored.
    pub(crate) fn open(
        sealer: &RequestStateSealer,
        binding: Binding,
        capabilities: ClientCapabilities,
        retry: RetryInput,
        limits: MrtrLimits,
    ) -> Result<Exchange, RpcError> {
        let sealed = match &retry.request_state {
            None => SealedState::default(),
            Some(token) => sealer
                .open(token, &binding)
                .map_err(|e| invalid_params(format!("invalid requestState: {e}")))?,
        };
        let mut asked: BTreeMap<String, InputKind> = BTreeMap::new();
        for (k, m) in &sealed.asked {
            if let Some(kind) = InputKind::from_method(m) {
                asked.insert(k.clone(), kind);
            }
        }
        for (key, kind) in &asked {
            if let Some(answer) = retry.responses.get(key) {
                kind.parse_response(answer)
                    .map_err(|e| invalid_params(format!("inputResponses.{key}: {e}")))?;
            }
        }
        Ok(Exchange {
            responses: retry.responses,
            carried: sealed.answers,
            asked,
            state: sealed.state,
            round: sealed.round,
            ..Exchange::fresh(binding, capabilities, limits)
        })
    }

    /// The exchange of a first attempt (no answers, no state from an earlier round): what
    /// [`open`](Self::open) makes of an empty [`RetryInput`], without a sealer to open nothing
    /// with.
    pub(crate) fn fresh(
        binding: Binding,
        capabilities: ClientCapabilities,
        limits: MrtrLimits,
    ) -> Exchange {
        Exchange {
            binding,
            capabilities,
            limits,
            responses: BTreeMap::new(),
            carried: BTreeMap::new(),
            asked: BTreeMap::new(),
            state: None,
            round: 0,
            run: Mutex::new(Run::default()),
        }
    }

    fn run(&self) -> MutexGuard<'_, Run> {
        self.run.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rounds of input this request has been through.
    #[cfg(test)]
    pub(crate) fn round(&self) -> u16 {
        self.round
    }

    /// The handler's state from the previous round (explicit layer).
    pub(crate) fn state(&self) -> Option<&Value> {
        self.state.as_ref()
    }

    fn answer(&self, key: &str) -> Option<&Value> {
        self.responses.get(key).or_else(|| self.carried.get(key))
    }

    /// Records the order of the fields of the form asked for under `key`, for
    /// [`form_orders`](Self::form_orders).
    pub(crate) fn form_order(&self, key: &str, order: Vec<String>) {
        self.run().form_orders.insert(key.to_owned(), order);
    }

    /// The field order of each form asked for in the current run (read before
    /// [`finish`](Self::finish), which ends the run).
    pub(crate) fn form_orders(&self) -> BTreeMap<String, Vec<String>> {
        let run = self.run();
        // Inserted one by one: collecting into a map sorts first, an instantiation of the
        // sort for every map type (the keys come sorted anyway).
        let mut orders = BTreeMap::new();
        for (key, order) in &run.form_orders {
            if run.asks.contains_key(key.as_str()) {
                orders.insert(key.clone(), order.clone());
            }
        }
        orders
    }

    /// Resolves one ask of the handler (the sugar layer).
    pub(crate) fn ask(&self, key: &str, request: InputRequest) -> Ask {
        let kind = InputKind::of(&request);
        let mut run = self.run();
        if !kind.declared_by(&self.capabilities) {
            run.missing.insert(kind.capability());
            return Ask::MissingCapability(kind);
        }
        if let Some(answer) = self.answer(key) {
            return match kind.parse_response(answer) {
                Ok(response) => {
                    run.used.insert(key.to_owned(), answer.clone());
                    Ask::Answered(Box::new(response))
                }
                Err(e) => {
                    let message = format!("inputResponses.{key}: {e}");
                    run.invalid.get_or_insert_with(|| message.clone());
                    Ask::Invalid(message)
                }
            };
        }
        if !run.asks.contains_key(key) && run.asks.len() >= self.limits.max_asks {
            run.overflow = true;
        } else {
            run.asks.insert(key.to_owned(), request);
        }
        Ask::Pending
    }

    /// The client's answer under `key` (the explicit layer): from `inputResponses`, else from
    /// an earlier round. An answer that is none of the three result shapes fails the request.
    pub(crate) fn input_response(&self, key: &str) -> Option<InputResponse> {
        let answer = self.answer(key)?;
        let parsed = match self.asked.get(key) {
            Some(kind) => kind.parse_response(answer),
            None => serde_json::from_value::<InputResponse>(answer.clone())
                .map_err(|e| format!("not an input response: {e}")),
        };
        let mut run = self.run();
        match parsed {
            Ok(response) => {
                run.used.insert(key.to_owned(), answer.clone());
                Some(response)
            }
            Err(e) => {
                run.invalid
                    .get_or_insert_with(|| format!("inputResponses.{key}: {e}"));
                None
            }
        }
    }

    /// Whether the current run left something for the client to answer (asks, an explicit
    /// `InputRequired`, a malformed answer): the request must then answer with that, not turn
    /// into a task.
    #[cfg(any(feature = "tasks", test))]
    pub(crate) fn has_asks(&self) -> bool {
        let run = self.run();
        !run.asks.is_empty() || run.explicit.is_some() || run.invalid.is_some() || run.overflow
    }

    /// Notes that the handler needed a client capability the request did not declare (a path
    /// such as `sampling` or `elicitation.url`); if the handler then fails, the request fails
    /// with `-32021` naming it.
    pub(crate) fn missing_capability(&self, path: &'static str) {
        self.run().missing.insert(path);
    }

    /// Records an [`InputRequired`] the handler returned (explicit layer). Two in one run are
    /// merged.
    pub(crate) fn suspend(&self, ask: InputRequired) {
        let mut run = self.run();
        match &mut run.explicit {
            Some(previous) => {
                previous.requests.extend(ask.requests);
                if ask.state.is_some() {
                    previous.state = ask.state;
                }
            }
            None => run.explicit = Some(ask),
        }
    }

    /// Ends the run: what the request answers.
    pub(crate) fn finish(&self, outcome: HandlerOutcome, sealer: &RequestStateSealer) -> Verdict {
        let mut run = std::mem::take(&mut *self.run());
        let outcome = match (run.explicit.take(), outcome) {
            (Some(mut recorded), HandlerOutcome::InputRequired(ask)) => {
                recorded.requests.extend(ask.requests);
                recorded.state = ask.state.or(recorded.state);
                HandlerOutcome::InputRequired(recorded)
            }
            (Some(recorded), _) => HandlerOutcome::InputRequired(recorded),
            (None, outcome) => outcome,
        };
        if let Some(message) = run.invalid {
            return Verdict::Error(invalid_params(message));
        }
        if run.overflow {
            return Verdict::Error(internal(format!(
                "the handler asked for more than {} inputs in one round",
                self.limits.max_asks
            )));
        }
        let mut next_state = None;
        let mut explicit = false;
        if let HandlerOutcome::InputRequired(ask) = &outcome {
            explicit = true;
            next_state = ask.state.clone();
            for (key, request) in &ask.requests {
                let kind = InputKind::of(request);
                if kind.declared_by(&self.capabilities) {
                    run.asks.insert(key.clone(), request.clone());
                } else {
                    run.missing.insert(kind.capability());
                }
            }
            if run.asks.len() > self.limits.max_asks {
                return Verdict::Error(internal(format!(
                    "the handler asked for more than {} inputs in one round",
                    self.limits.max_asks
                )));
            }
        }
        let suspended = !run.asks.is_empty() || (explicit && next_state.is_some());
        if !suspended {
            let failed = matches!(
                outcome,
                HandlerOutcome::Failed | HandlerOutcome::InputRequired(_)
            );
            if failed && !run.missing.is_empty() {
                return Verdict::Error(wire::missing_capability(&required_capabilities(
                    &run.missing,
                )));
            }
            if explicit {
                return Verdict::Error(internal(
                    "the handler returned an empty InputRequired (no requests, no state)",
                ));
            }
            return Verdict::Complete;
        }
        let round = self.round.saturating_add(1);
        if round > self.limits.max_rounds {
            return Verdict::Error(invalid_params(format!(
                "the request did not complete within {} rounds of input",
                self.limits.max_rounds
            )));
        }
        let mut answers = self.carried.clone();
        answers.append(&mut run.used);
        let mut asked = BTreeMap::new();
        for (k, r) in &run.asks {
            asked.insert(k.clone(), InputKind::of(r).method().to_owned());
        }
        let sealed = SealedState {
            round,
            state: next_state,
            answers,
            asked,
        };
        let token = match sealer.seal(&self.binding, &sealed) {
            Ok(token) => token,
            Err(e) => return Verdict::Error(internal(e.to_string())),
        };
        match wire::input_required(run.asks, Some(token)) {
            Ok(result) => Verdict::InputRequired(result),
            Err(e) => Verdict::Error(internal(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stateless::seal::SealingKey;
    use mcp_types::ListRootsRequest;
    use serde_json::json;

    fn sealer() -> RequestStateSealer {
        RequestStateSealer::new(SealingKey::new([9u8; 32]).unwrap())
    }

    fn binding() -> Binding {
        Binding::new("tools/call", "t")
    }

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).unwrap()
    }

    fn all_caps() -> ClientCapabilities {
        caps(json!({"elicitation": {}, "sampling": {}, "roots": {}}))
    }

    fn elicit(message: &str) -> InputRequest {
        serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": message,
                       "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
        }))
        .unwrap()
    }

    fn sample() -> InputRequest {
        serde_json::from_value(json!({
            "method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "?"}}], "maxTokens": 10}
        }))
        .unwrap()
    }

    fn roots() -> InputRequest {
        InputRequest::ListRoots(ListRootsRequest::default())
    }

    fn retry(responses: Value, state: Option<&str>) -> RetryInput {
        let mut params = json!({"inputResponses": responses});
        if let Some(s) = state {
            params["requestState"] = json!(s);
        }
        RetryInput::lift(Some(&params)).unwrap()
    }

    fn open(c: ClientCapabilities, r: RetryInput) -> Result<Exchange, RpcError> {
        Exchange::open(&sealer(), binding(), c, r, MrtrLimits::default())
    }

    fn input_required(v: Verdict) -> InputRequiredResult {
        match v {
            Verdict::InputRequired(r) => r,
            other => panic!("expected input_required, got {other:?}"),
        }
    }

    const ALICE: &str = r#"{"action": "accept", "content": {"name": "Alice"}}"#;

    #[test]
    fn first_round_records_every_ask() {
        let x = open(all_caps(), RetryInput::default()).unwrap();
        assert_eq!(x.ask("name", elicit("Name?")), Ask::Pending);
        assert_eq!(x.ask("llm", sample()), Ask::Pending);
        assert_eq!(x.ask("roots", roots()), Ask::Pending);
        let r = input_required(x.finish(HandlerOutcome::Failed, &sealer()));
        let requests = r.input_requests.unwrap();
        assert_eq!(
            requests.keys().collect::<Vec<_>>(),
            ["llm", "name", "roots"]
        );
        let token = r.request_state.unwrap();
        let opened = sealer().open(&token, &binding()).unwrap();
        assert_eq!(opened.round, 1);
        assert_eq!(opened.asked["name"], "elicitation/create");
        assert!(opened.answers.is_empty());
    }

    #[test]
    fn answers_resolve_and_carry_forward() {
        // Round 1: step1 asked.
        let x = open(all_caps(), RetryInput::default()).unwrap();
        assert_eq!(x.ask("step1", elicit("1?")), Ask::Pending);
        let r1 = input_required(x.finish(HandlerOutcome::Failed, &sealer()));
        let s1 = r1.request_state.unwrap();
        // Round 2: step1 answered, step2 asked; the new state differs and carries step1.
        let alice: Value = serde_json::from_str(ALICE).unwrap();
        let x = open(all_caps(), retry(json!({"step1": alice}), Some(&s1))).unwrap();
        assert_eq!(x.round(), 1);
        assert!(matches!(
            x.ask("step1", elicit("1?")),
            Ask::Answered(b) if matches!(*b, InputResponse::Elicit(_))
        ));
        assert_eq!(x.ask("step2", sample()), Ask::Pending);
        let r2 = input_required(x.finish(HandlerOutcome::Failed, &sealer()));
        assert_eq!(r2.input_requests.as_ref().unwrap().len(), 1);
        let s2 = r2.request_state.unwrap();
        assert_ne!(s1, s2);
        // Round 3: only step2 in inputResponses; step1 comes from the state.
        let answer =
            json!({"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"});
        let x = open(all_caps(), retry(json!({"step2": answer}), Some(&s2))).unwrap();
        assert_eq!(x.round(), 2);
        assert!(matches!(x.ask("step1", elicit("1?")), Ask::Answered(_)));
        assert!(matches!(
            x.ask("step2", sample()),
            Ask::Answered(b) if matches!(*b, InputResponse::CreateMessage(_))
        ));
        assert_eq!(
            x.finish(HandlerOutcome::Succeeded, &sealer()),
            Verdict::Complete
        );
    }

    #[test]
    fn missing_and_extra_keys() {
        // Only an unknown key: the ask is repeated, not an error.
        let x = open(
            all_caps(),
            retry(json!({"wrong_key": {"action": "cancel"}}), None),
        )
        .unwrap();
        assert_eq!(x.ask("user_name", elicit("Name?")), Ask::Pending);
        let r = input_required(x.finish(HandlerOutcome::Failed, &sealer()));
        assert!(r.input_requests.unwrap().contains_key("user_name"));
        // Extra keys beside the right one are ignored and not carried.
        let alice: Value = serde_json::from_str(ALICE).unwrap();
        let x = open(
            all_caps(),
            retry(
                json!({"user_name": alice, "extra1": 1, "extra2": {"x": true}}),
                None,
            ),
        )
        .unwrap();
        assert!(matches!(
            x.ask("user_name", elicit("Name?")),
            Ask::Answered(_)
        ));
        assert_eq!(x.ask("next", roots()), Ask::Pending);
        let token = input_required(x.finish(HandlerOutcome::Failed, &sealer()))
            .request_state
            .unwrap();
        let carried = sealer().open(&token, &binding()).unwrap().answers;
        assert_eq!(carried.keys().collect::<Vec<_>>(), ["user_name"]);
    }

    #[test]
    fn wrong_shapes_fail_with_invalid_params() {
        // Against the kind sealed in the state: refused before the handler runs.
        let x = open(all_caps(), RetryInput::default()).unwrap();
        x.ask("user_name", elicit("Name?"));
        let state = input_required(x.finish(HandlerOutcome::Failed, &sealer()))
            .request_state
            .unwrap();
        let e = open(all_caps(), retry(json!({"user_name": 12345}), Some(&state))).unwrap_err();
        assert_eq!(e.code, error_codes::INVALID_PARAMS);
        assert!(e.message.contains("user_name"), "{}", e.message);
        // Without a state: refused when the handler asks, whatever the handler returns.
        let x = open(all_caps(), retry(json!({"user_name": 12345}), None)).unwrap();
        assert!(matches!(
            x.ask("user_name", elicit("Name?")),
            Ask::Invalid(_)
        ));
        let v = x.finish(HandlerOutcome::Succeeded, &sealer());
        assert!(matches!(v, Verdict::Error(e) if e.code == error_codes::INVALID_PARAMS));
        // An elicitation answer under a sampling ask.
        let alice: Value = serde_json::from_str(ALICE).unwrap();
        let x = open(all_caps(), retry(json!({"llm": alice}), None)).unwrap();
        assert!(matches!(x.ask("llm", sample()), Ask::Invalid(_)));
        // Explicit layer: not an input response at all.
        let x = open(all_caps(), retry(json!({"k": [1, 2]}), None)).unwrap();
        assert_eq!(x.input_response("k"), None);
        assert!(matches!(
            x.finish(HandlerOutcome::Succeeded, &sealer()),
            Verdict::Error(e) if e.code == error_codes::INVALID_PARAMS
        ));
    }

    #[test]
    fn tampered_or_foreign_state_is_refused() {
        let x = open(all_caps(), RetryInput::default()).unwrap();
        x.ask("a", roots());
        let state = input_required(x.finish(HandlerOutcome::Failed, &sealer()))
            .request_state
            .unwrap();
        let tampered = format!("{state}-TAMPERED");
        let e = open(all_caps(), retry(json!({}), Some(&tampered))).unwrap_err();
        assert_eq!(e.code, error_codes::INVALID_PARAMS);
        assert!(e.message.contains("requestState"));
        let other_tool = Exchange::open(
            &sealer(),
            Binding::new("tools/call", "other"),
            all_caps(),
            retry(json!({}), Some(&state)),
            MrtrLimits::default(),
        );
        assert!(other_tool.is_err());
    }

    #[test]
    fn capabilities_decide_what_may_be_asked() {
        let sampling_only = caps(json!({"sampling": {}}));
        let x = open(sampling_only.clone(), RetryInput::default()).unwrap();
        assert_eq!(
            x.ask("name", elicit("Name?")),
            Ask::MissingCapability(InputKind::Elicitation)
        );
        assert_eq!(x.ask("llm", sample()), Ask::Pending);
        let r = input_required(x.finish(HandlerOutcome::Failed, &sealer()));
        let requests = r.input_requests.unwrap();
        assert!(requests.contains_key("llm") && !requests.contains_key("name"));
        // Nothing declared and the handler failed: -32021 naming what it needed.
        let x = open(caps(json!({})), RetryInput::default()).unwrap();
        assert_eq!(
            x.ask("llm", sample()),
            Ask::MissingCapability(InputKind::Sampling)
        );
        let v = x.finish(HandlerOutcome::Failed, &sealer());
        let Verdict::Error(e) = v else {
            panic!("{v:?}")
        };
        assert_eq!(e.code, error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY);
        assert_eq!(
            e.data,
            Some(json!({"requiredCapabilities": {"sampling": {}}}))
        );
        // The handler recovered: its result stands.
        let x = open(caps(json!({})), RetryInput::default()).unwrap();
        x.ask("llm", sample());
        assert_eq!(
            x.finish(HandlerOutcome::Succeeded, &sealer()),
            Verdict::Complete
        );
    }

    #[test]
    fn explicit_layer() {
        let params = match elicit("Sure?") {
            InputRequest::Elicit(e) => e.params,
            _ => unreachable!(),
        };
        let ask = InputRequired::new()
            .elicit("confirm", params)
            .roots("roots")
            .state(json!({"step": 1}));
        let x = open(caps(json!({"elicitation": {}})), RetryInput::default()).unwrap();
        let r = input_required(x.finish(HandlerOutcome::InputRequired(ask.clone()), &sealer()));
        // roots was not declared: not asked.
        assert_eq!(
            r.input_requests
                .as_ref()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["confirm"]
        );
        let state = r.request_state.unwrap();
        let alice: Value = serde_json::from_str(ALICE).unwrap();
        let x = open(
            caps(json!({"elicitation": {}})),
            retry(json!({"confirm": alice}), Some(&state)),
        )
        .unwrap();
        assert_eq!(x.state(), Some(&json!({"step": 1})));
        assert!(matches!(
            x.input_response("confirm"),
            Some(InputResponse::Elicit(_))
        ));
        assert_eq!(x.input_response("absent"), None);
        assert_eq!(
            x.finish(HandlerOutcome::Succeeded, &sealer()),
            Verdict::Complete
        );
        // Only undeclared asks: -32021.
        let x = open(caps(json!({})), RetryInput::default()).unwrap();
        let v = x.finish(
            HandlerOutcome::InputRequired(InputRequired::new().roots("r")),
            &sealer(),
        );
        assert!(
            matches!(v, Verdict::Error(e) if e.code == error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY)
        );
        // State only is a valid round.
        let x = open(caps(json!({})), RetryInput::default()).unwrap();
        let r = input_required(x.finish(
            HandlerOutcome::InputRequired(InputRequired::new().state(json!(1))),
            &sealer(),
        ));
        assert!(r.input_requests.is_none() && r.request_state.is_some());
        let x = open(caps(json!({})), RetryInput::default()).unwrap();
        assert!(matches!(
            x.finish(HandlerOutcome::InputRequired(InputRequired::new()), &sealer()),
            Verdict::Error(e) if e.code == error_codes::INTERNAL_ERROR
        ));
    }

    #[test]
    fn recorded_capabilities_and_explicit_asks() {
        let x = open(caps(json!({"sampling": {}})), RetryInput::default()).unwrap();
        x.missing_capability("sampling.tools");
        x.missing_capability("elicitation.url");
        let Verdict::Error(e) = x.finish(HandlerOutcome::Failed, &sealer()) else {
            panic!("expected -32021")
        };
        assert_eq!(
            e.data,
            Some(
                json!({"requiredCapabilities": {"elicitation": {"url": {}}, "sampling": {"tools": {}}}})
            )
        );
        // An InputRequired recorded during the run wins over the handler's placeholder result.
        let x = open(all_caps(), RetryInput::default()).unwrap();
        x.suspend(InputRequired::new().roots("a"));
        x.suspend(InputRequired::new().roots("b").state(json!(2)));
        let r = input_required(x.finish(HandlerOutcome::Failed, &sealer()));
        assert_eq!(r.input_requests.unwrap().len(), 2);
        let opened = sealer()
            .open(&r.request_state.unwrap(), &binding())
            .unwrap();
        assert_eq!(opened.state, Some(json!(2)));
    }

    #[test]
    fn limits() {
        let limits = MrtrLimits {
            max_rounds: 2,
            max_asks: 2,
        };
        let x = Exchange::open(
            &sealer(),
            binding(),
            all_caps(),
            RetryInput::default(),
            limits,
        )
        .unwrap();
        for k in ["a", "b", "c"] {
            assert_eq!(x.ask(k, roots()), Ask::Pending);
        }
        assert!(matches!(
            x.finish(HandlerOutcome::Failed, &sealer()),
            Verdict::Error(e) if e.code == error_codes::INTERNAL_ERROR
        ));
        // Rounds: the third input_required is refused.
        let mut state: Option<String> = None;
        for round in 1..=3u16 {
            let r = match &state {
                None => RetryInput::default(),
                Some(s) => retry(json!({}), Some(s)),
            };
            let x = Exchange::open(&sealer(), binding(), all_caps(), r, limits).unwrap();
            x.ask(&format!("k{round}"), roots());
            match x.finish(HandlerOutcome::Failed, &sealer()) {
                Verdict::InputRequired(r) if round <= 2 => state = r.request_state,
                Verdict::Error(e) if round == 3 => {
                    assert_eq!(e.code, error_codes::INVALID_PARAMS);
                    assert!(e.message.contains("2 rounds"));
                }
                other => panic!("round {round}: {other:?}"),
            }
        }
    }
}
