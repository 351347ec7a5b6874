#include "server/generation_input.h"

#include <utility>

namespace llmserve {

ChatConversation ChatFromProto(const v1::ChatInput& chat) {
  ChatConversation c;
  c.messages.reserve(static_cast<size_t>(chat.messages_size()));
  for (const v1::ChatMessage& m : chat.messages()) c.messages.push_back({m.role(), m.content()});
  c.add_generation_prompt = !chat.has_add_generation_prompt() || chat.add_generation_prompt();
  c.tools_json = chat.tools_json();
  return c;
}

namespace {

using constraint::ConstraintKind;
using constraint::ConstraintSpec;

// The request's constraint (none when unset) and the name of the field that carried it.
void ConstraintFromProto(const v1::OutputConstraint& c, GenerationInput* in) {
  ConstraintSpec spec;
  spec.whitespace_flexible = c.flexible_whitespace();
  switch (c.kind_case()) {
    case v1::OutputConstraint::kJsonSchema:
      spec.kind = ConstraintKind::kJsonSchema;
      spec.text = c.json_schema();
      in->constraint_field = "constraint.json_schema";
      break;
    case v1::OutputConstraint::kJsonObject:
      spec.kind = ConstraintKind::kJson;
      spec.object_only = true;
      in->constraint_field = "constraint.json_object";
      break;
    case v1::OutputConstraint::kRegex:
      spec.kind = ConstraintKind::kRegex;
      spec.text = c.regex();
      in->constraint_field = "constraint.regex";
      break;
    case v1::OutputConstraint::kChoice:
      spec.kind = ConstraintKind::kChoice;
      spec.choices.assign(c.choice().choices().begin(), c.choice().choices().end());
      in->constraint_field = "constraint.choice.choices";
      break;
    case v1::OutputConstraint::kGrammar:
      spec.kind = ConstraintKind::kGrammar;
      spec.text = c.grammar();
      in->constraint_field = "constraint.grammar";
      break;
    case v1::OutputConstraint::KIND_NOT_SET:
      return;  // an empty OutputConstraint constrains nothing
  }
  in->constraint = std::move(spec);
}

}  // namespace

GenerationInput FromGenerateRequest(const v1::GenerateRequest& r) {
  GenerationInput in;
  in.names = &GrpcFieldNames();
  switch (r.input_case()) {
    case v1::GenerateRequest::kText:
      in.prompt = PromptKind::kText;
      in.text = r.text();
      break;
    case v1::GenerateRequest::kTokens:
      in.prompt = PromptKind::kTokens;
      in.token_ids.assign(r.tokens().ids().begin(), r.tokens().ids().end());
      break;
    case v1::GenerateRequest::kChat:
      in.prompt = PromptKind::kChat;
      in.chat = ChatFromProto(r.chat());
      break;
    case v1::GenerateRequest::INPUT_NOT_SET:
      break;
  }
  if (r.has_add_bos()) in.add_bos = r.add_bos();
  if (r.has_temperature()) in.temperature = r.temperature();
  if (r.has_top_k()) in.top_k = r.top_k();
  if (r.has_top_p()) in.top_p = r.top_p();
  if (r.has_min_p()) in.min_p = r.min_p();
  if (r.has_repetition_penalty()) in.repetition_penalty = r.repetition_penalty();
  if (r.has_presence_penalty()) in.presence_penalty = r.presence_penalty();
  if (r.has_frequency_penalty()) in.frequency_penalty = r.frequency_penalty();
  if (r.has_seed()) in.seed = r.seed();
  if (r.has_logprobs()) in.logprobs = r.logprobs();
  in.logit_bias.insert(r.logit_bias().begin(), r.logit_bias().end());
  if (r.has_max_tokens()) in.max_tokens = r.max_tokens();
  in.stop.assign(r.stop().begin(), r.stop().end());
  in.stop_token_ids.assign(r.stop_token_ids().begin(), r.stop_token_ids().end());
  in.ignore_eos = r.ignore_eos();
  in.request_id = r.request_id();
  in.cache_salt = r.cache_salt();
  if (r.has_constraint()) ConstraintFromProto(r.constraint(), &in);
  return in;
}

}  // namespace llmserve
