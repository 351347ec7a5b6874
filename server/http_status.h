// The one place where absl::Status becomes an HTTP error (the OpenAI-compatible API's
// edge, as status_convert.h is gRPC's): an HTTP status and OpenAI's error object
//
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "top_p", "code": null}}
//
//   INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE  400  (param: the field WithParam named)
//   UNAUTHENTICATED 401   PERMISSION_DENIED 403   NOT_FOUND 404   RESOURCE_EXHAUSTED 429
//   UNAVAILABLE 503   DEADLINE_EXCEEDED 504   CANCELLED 499   anything else 500
//
// A status may carry an explicit HTTP status (WithHttpStatus: 405, 413, 415, ...) or
// parameter name (WithParam; every field check attaches one, see request_fields.h) as
// payloads, for what the canonical codes cannot say. "param" is null without one: it is
// never guessed from the message.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace llmserve {

struct HttpError {
  int status = 500;
  nlohmann::json body;  // {"error": {...}}
};

// `status` with the HTTP status it is answered with.
absl::Status WithHttpStatus(absl::Status status, int http_status);
// `status` naming `param` as the request field at fault.
absl::Status WithParam(absl::Status status, std::string_view param);

// The HTTP status for a (non-OK) status.
int HttpStatusCode(const absl::Status& status);
// The HTTP status and OpenAI error object for a (non-OK) status.
HttpError ToHttpError(const absl::Status& status);

}  // namespace llmserve
