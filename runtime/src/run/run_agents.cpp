// A run's Agent Turns (jr2/run.h, docs/runtime.md#agents): each Agent Gate that opens is put to
// the scripted harness (Run::scriptAgents) or to a model server (Run::modelAgents, the exchange
// itself in agents.cpp); a pick the Gate refuses is told, and the Agent picks again up to its
// `picks:`, then the Gate waits for a person.
#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "jr2/run.h"
#include "run/agents.h"
#include "run/engine.h"

namespace jr2rt {

void Run::scriptAgents(Json script) {
  agentScript_ = std::move(script);
  std::vector<std::string> open;
  for (const auto& [name, g] : gates_) {
    if (g.kind == OpenGate::Kind::kAgent) open.push_back(name);
  }
  for (const auto& name : open) answerAgent(name);
}

// The end of a refused pick's feed line, for either harness: the Agent picks again, or its
// `picks:` are spent and the Gate waits for a person.
static std::string AfterRefusal(bool again, int refused, const std::string& gate) {
  if (again) return "; it picks again";
  return "; " + std::to_string(refused) + " picks refused, the Gate " + gate +
         " waits for a person";
}

void Run::modelAgents(std::shared_ptr<const ModelServer> server) {
  modelServer_ = std::move(server);
  std::vector<std::string> open;
  for (const auto& [name, g] : gates_) {
    if (g.kind == OpenGate::Kind::kAgent) open.push_back(name);
  }
  for (const auto& name : open) answerAgent(name);
}

int Run::agentPicks(const std::string& agent) const {
  const Json* definition = registry_.agent(agent);
  if (definition == nullptr || !definition->value("picks", Json()).is_number_integer())
    return kAgentPicks;
  return std::max(1, (*definition)["picks"].get<int>());
}

bool Run::pickAgain(GateEntry& entry) { return ++entry.refusedPicks < agentPicks(agentOf(entry)); }

void Run::answerAgent(const std::string& gate) {
  auto it = gates_.find(gate);
  // Its `picks:` spent (a run taken up again after it waited for a person): the Gate is a
  // person's now, and neither harness is asked.
  if (it != gates_.end() && it->second.refusedPicks >= agentPicks(agentOf(it->second))) return;
  if (modelServer_) return askModel(gate);
  if (it == gates_.end() || !agentScript_.is_object()) return;
  const std::string agent = agentOf(it->second);
  if (!agentScript_.contains(agent)) return;
  const uint64_t opening = it->second.opening;
  // The reply is chosen when it is delivered, for this opening of the Gate only: the count never
  // runs back, and two Gates of one Agent open at once get one reply each, in order.
  post([this, gate, agent, opening] {
    auto open = gates_.find(gate);
    if (open == gates_.end() || open->second.opening != opening) return;  // left meanwhile
    const Json& replies = agentScript_[agent];
    const int64_t used = agentReplies_.value(agent, int64_t{0});
    if (!replies.is_array() || used >= static_cast<int64_t>(replies.size())) {
      emit("agent", {{"agent", agent}, {"gate", gate}, {"reply", used + 1}, {"answered", false}},
           "agent " + agent + ": the script has no reply " + std::to_string(used + 1) +
               "; the Gate " + gate + " waits for an answer");
      return;
    }
    const Json& reply = replies[static_cast<size_t>(used)];
    const std::string event = reply.value("event", std::string());
    const Json payload = reply.value("payload", Json::object());
    agentReplies_[agent] = used + 1;
    try {
      accept(gate, event, payload, nullptr, "agent " + agent);
    } catch (const BadInput& e) {
      // A pick outside the Menu, or a payload its schema refuses: the Turn is told why and may
      // pick again, up to kAgentPicks picks at one opening of the Gate; then the Gate waits for
      // a person, the refusals on the feed.
      const bool again = pickAgain(open->second);
      emit("agent",
           {{"agent", agent},
            {"gate", gate},
            {"reply", used + 1},
            {"answered", false},
            {"event", event},
            {"payload", payload},
            {"refused", ValidUtf8(e.what())}},
           "agent " + agent + ": scripted reply " + std::to_string(used + 1) + " at " + gate +
               " is refused: " + e.what() + AfterRefusal(again, open->second.refusedPicks, gate));
      if (again) answerAgent(gate);
      return;
    }
    emit("agent",
         {{"agent", agent},
          {"gate", gate},
          {"reply", used + 1},
          {"answered", true},
          {"event", event}},
         "agent " + agent + " answered " + event + " at " + gate + " (scripted reply " +
             std::to_string(used + 1) + ")");
  });
}

void Run::askModel(const std::string& gate) {
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.kind != OpenGate::Kind::kAgent) return;
  const GateEntry& entry = it->second;
  const OpenGate shownGate = shown(gate, entry);
  const std::string& agent = shownGate.agent;
  ModelTurn& turn = modelTurns_[gate];
  if (turn.opening != entry.opening || !turn.messages.is_array()) {
    const Json* definition = registry_.agent(agent);
    turn = ModelTurn();
    turn.opening = entry.opening;
    turn.messages = ModelMessages(definition ? *definition : Json::object(), shownGate.meta);
  }
  const Json request = ModelRequest(*modelServer_, turn.messages, MenuJson(shownGate));
  turn.body = std::make_shared<const std::string>(request.dump());
  turn.attempt = 1;
  turn.backoffMs = modelServer_->backoffMs;
  turn.retryTimer.reset();
  turn.retryDueMs.reset();
  const int pick = entry.refusedPicks + 1;
  emit("agent", {{"agent", agent}, {"gate", gate}, {"model", modelServer_->model}, {"pick", pick}},
       "agent " + agent + " asks " + modelServer_->model + " at " + modelServer_->shown +
           " for a pick at " + gate +
           (pick > 1 ? " (pick " + std::to_string(pick) + " of " +
                           std::to_string(agentPicks(agent)) + ")"
                     : std::string()));
  tryModel(gate);
}

void Run::tryModel(const std::string& gate) {
  auto it = gates_.find(gate);
  auto turn = modelTurns_.find(gate);
  if (it == gates_.end() || turn == modelTurns_.end() || !turn->second.body) return;
  // A try holds an effect thread while it waits for the server (HttpCall blocks); its answer
  // comes back like a host function's.
  const uint64_t opening = it->second.opening;
  offload(
      [server = modelServer_, body = turn->second.body, attempt = turn->second.attempt,
       backoff = turn->second.backoffMs] {
        return TryModel(*server, *body, attempt, backoff,
                        server->transport ? *server->transport : HttpTransport(*server));
      },
      [this, gate, opening](const Json& answer) { modelAnswered(gate, opening, answer); },
      [](const Failure&) {});  // TryModel answers every failure as {"kind": "failed"}
}

void Run::retryModel(const std::string& gate, uint64_t opening) {
  auto it = gates_.find(gate);
  auto turn = modelTurns_.find(gate);
  if (it == gates_.end() || it->second.opening != opening || turn == modelTurns_.end() ||
      turn->second.opening != opening)
    return;  // the Gate left meanwhile
  turn->second.retryTimer.reset();
  turn->second.retryDueMs.reset();
  tryModel(gate);
}

void Run::modelAnswered(const std::string& gate, uint64_t opening, const Json& answer) {
  auto it = gates_.find(gate);
  if (it == gates_.end() || it->second.opening != opening) return;  // the Gate left meanwhile
  GateEntry& entry = it->second;
  const std::string agent = agentOf(entry);
  const std::string kind = answer.value("kind", "");
  if (kind == "retry") {
    Json told = answer.value("data", Json::object());
    told["agent"] = agent;
    told["gate"] = gate;
    emit("agent", told, "agent " + agent + " at " + gate + ": " + answer.value("line", ""));
    ModelTurn& turn = modelTurns_[gate];
    turn.attempt = answer.value("attempt", turn.attempt + 1);
    turn.backoffMs = answer.value("backoffMs", turn.backoffMs * 2);
    const int64_t waitMs = std::max<int64_t>(0, answer.value("waitMs", int64_t{0}));
    if (!clock_.real()) {
      turn.retryDueMs = clock_.nowMs() + waitMs;  // fired by tick(), when the clock says
      return;
    }
    // The wait is a timer on the engine: no thread waits, and a drive waits for it as for an
    // effect (counted out until its handler runs). Destroying it (the Gate closed, the run
    // ended or destroyed) cancels it; its handler then only counts it back.
    auto timer = std::make_shared<boost::asio::steady_timer>(engine_->io(),
                                                             std::chrono::milliseconds(waitMs));
    engine_->effectOut();
    Engine& engine = *engine_;
    std::weak_ptr<int> life = life_;
    timer->async_wait([this, &engine, life, gate, opening](const boost::system::error_code& ec) {
      engine.effectBack();
      if (ec || life.expired()) return;
      post([this, gate, opening] { retryModel(gate, opening); });
    });
    turn.retryTimer = std::move(timer);
    return;
  }
  Json data = {{"agent", agent}, {"gate", gate}, {"model", modelServer_->model}};
  if (kind == "failed") {
    data["answered"] = false;
    data["failed"] = answer.value("why", "");
    emit("agent", data,
         "agent " + agent + " at " + gate + ": " + answer.value("why", "") + "; the Gate " + gate +
             " waits for a person");
    return;
  }
  ModelTurn& turn = modelTurns_[gate];
  // A refused pick: the model hears why, in the conversation, and may pick again.
  auto refuse = [&](const std::string& why, const Json& reply) {
    data["answered"] = false;
    data["refused"] = why;
    // What the model picked, as the trace keeps it (docs/runtime.md#traces): its kind, and its
    // event and arguments or its text.
    Json pick = Json::object();
    for (const char* key : {"kind", "event", "payload", "text"}) {
      if (answer.contains(key)) pick[key] = answer[key];
    }
    data["pick"] = std::move(pick);
    const bool again = pickAgain(entry);
    emit("agent", data,
         "agent " + agent + " at " + gate + ": " + why +
             AfterRefusal(again, entry.refusedPicks, gate));
    if (!again) return;
    turn.messages.push_back(answer.value("message", Json::object()));
    turn.messages.push_back(reply);
    askModel(gate);
  };
  const std::string tell = "Refused: ";
  const std::string pickOne = " Pick again: answer with one tool call.";
  if (kind == "text") {
    const std::string text = answer.value("text", "");
    refuse("the model answered in text, not with a tool call" +
               (text.empty() ? std::string() : " (\"" + ValidUtf8(text.substr(0, 120)) + "\")"),
           {{"role", "user"},
            {"content",
             "You answered in text. Answer with exactly one tool call, one of the "
             "tools you were given."}});
    return;
  }
  const std::string event = answer.value("event", "");
  const std::string callId = answer.value("callId", "call_0");
  if (kind == "bad-arguments") {
    const std::string why = answer.value("why", "");
    refuse("its pick `" + event + "` is refused: " + why,
           {{"role", "tool"}, {"tool_call_id", callId}, {"content", tell + why + "." + pickOne}});
    return;
  }
  try {
    accept(gate, event, answer.value("payload", Json::object()), nullptr, "agent " + agent);
  } catch (const BadInput& e) {
    const std::string why = ValidUtf8(e.what());
    refuse("its pick `" + ValidUtf8(event) + "` is refused: " + why,
           {{"role", "tool"}, {"tool_call_id", callId}, {"content", tell + why + "." + pickOne}});
    return;
  }
  data["answered"] = true;
  data["event"] = event;
  // Only the first call is the pick (the harness built no other: agents.h).
  const int64_t calls = answer.value("calls", int64_t{1});
  if (calls > 1) data["calls"] = calls;
  emit("agent", data,
       "agent " + agent + " answered " + event + " at " + gate + " (" + modelServer_->model +
           (calls > 1 ? ", the first of its " + std::to_string(calls) + " tool calls; the other " +
                            std::to_string(calls - 1) + " dropped"
                      : "") +
           ")");
}

}  // namespace jr2rt
