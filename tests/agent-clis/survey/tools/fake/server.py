#!/usr/bin/env python3
"""A stand-in model provider for trying agent CLIs against loopback.

Speaks, streamed (SSE) or not, with the event shapes of tests/providers/src/*.rs:
  POST .../messages                      Anthropic Messages
  POST .../responses                     OpenAI Responses
  POST .../chat/completions              OpenAI Chat Completions
  POST .../models/M:streamGenerateContent (alt=sse or a JSON array), :generateContent,
       :countTokens                      Gemini
  GET  .../models                        a model list (OpenAI / Anthropic / Gemini shapes)

The script is decided per request, not per turn number, because CLIs send side requests
(titles, routing, summaries) of their own:
  - the last message is a tool result -> a final text answer;
  - else the request offers a file-writing tool -> a call to it writing hello.txt;
  - else a shell tool -> a call running `printf ... > hello.txt`;
  - else, JSON asked for (Gemini responseSchema / OpenAI json_schema) -> a JSON value
    built from the schema; else a short text (aider gets a whole-file edit block).

Every request is appended to the --log file as one JSON line (path, headers, body, the
reply kind chosen). Keys are not checked (any key is accepted) but the header that carried
one is logged.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

ARGS = None
LOCK = threading.Lock()
COUNTER = [0]

FINAL_TEXT = "Done: I wrote hello.txt with the greeting."
FILE_NAME = "hello.txt"
FILE_CONTENT = "hello from the fake provider\n"

WRITE_TOOLS = [
    "write_file", "Write", "write", "create_file", "create", "writeFile", "WriteFile",
    "write_to_file", "str_replace_based_edit_tool", "str_replace_editor", "edit_file",
]
SHELL_TOOLS = [
    "shell", "exec_command", "bash", "Bash", "run_shell_command", "shell_command",
    "execute_command", "run_terminal_cmd", "run_command",
]
PATH_KEYS = ["file_path", "filePath", "path", "absolute_path", "filename", "file", "target_file"]
CONTENT_KEYS = ["content", "file_text", "text", "contents", "new_content", "code"]


def next_id():
    with LOCK:
        COUNTER[0] += 1
        return COUNTER[0]


def pieces(text, size=12):
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


# --- reading a request, whatever its API -------------------------------------------------

def tools_of(api, body):
    """[(name, json_schema)] the request offers."""
    out = []
    for tool in body.get("tools") or []:
        if api == "messages":
            out.append((tool.get("name"), tool.get("input_schema") or {}))
        elif api == "responses":
            if tool.get("type") == "function":
                out.append((tool.get("name"), tool.get("parameters") or {}))
            elif tool.get("type") == "custom":
                out.append((tool.get("name"), {"custom": True}))
            elif tool.get("type") == "local_shell":
                out.append(("local_shell", {"local_shell": True}))
        elif api == "chat":
            fn = tool.get("function") or {}
            out.append((fn.get("name"), fn.get("parameters") or {}))
        elif api == "gemini":
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or []:
                out.append((decl.get("name"),
                            decl.get("parametersJsonSchema") or decl.get("parameters") or {}))
    return [(n, s) for n, s in out if n]


def last_is_tool_result(api, body):
    if api == "messages":
        msgs = body.get("messages") or []
        if not msgs:
            return False
        content = msgs[-1].get("content")
        return isinstance(content, list) and any(
            isinstance(c, dict) and c.get("type") == "tool_result" for c in content)
    if api == "responses":
        items = body.get("input")
        if not isinstance(items, list) or not items:
            return False
        # Trailing non-message items after the call output (e.g. reasoning) are skipped.
        for item in reversed(items):
            kind = item.get("type")
            if kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
                return True
            if kind == "message" or item.get("role"):
                return False
        return False
    if api == "chat":
        msgs = body.get("messages") or []
        return bool(msgs) and msgs[-1].get("role") == "tool"
    if api == "gemini":
        contents = body.get("contents") or []
        if not contents:
            return False
        return any("functionResponse" in p or "function_response" in p
                   for p in contents[-1].get("parts") or [])
    return False


def fill_schema(schema, depth=0):
    """A JSON value that fits a (simple) JSON schema."""
    if depth > 6 or not isinstance(schema, dict):
        return "x"
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if isinstance(kind, str):
        kind = kind.lower()
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: fill_schema(v, depth + 1) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return "fake"


def tool_args(name, schema, workdir):
    """Arguments for a write (or shell) call, fitted to the tool's schema."""
    path = os.path.join(workdir, FILE_NAME)
    props = (schema or {}).get("properties") or {}
    required = (schema or {}).get("required") or []
    if name in SHELL_TOOLS or name == "local_shell":
        cmd = "printf '" + FILE_CONTENT.replace("\n", "\\n") + "' > " + FILE_NAME
        args = {}
        for key in ("command", "cmd"):
            if key in props:
                ptype = props[key].get("type")
                args[key] = ["bash", "-lc", cmd] if ptype == "array" else cmd
        if not args:
            args = {"command": cmd}
        for key in ("workdir", "cwd", "directory"):
            if key in props:
                args[key] = workdir
        for key in ("description",):
            if key in props:
                args[key] = "write hello.txt"
        return args
    args = {}
    for key in PATH_KEYS:
        if key in props:
            args[key] = path
            break
    for key in CONTENT_KEYS:
        if key in props:
            args[key] = FILE_CONTENT
            break
    if "command" in props and name in ("str_replace_based_edit_tool", "str_replace_editor"):
        args["command"] = "create"
    for key in required:
        if key not in args:
            args[key] = fill_schema(props.get(key, {}))
    if not props:
        args = {"file_path": path, "content": FILE_CONTENT}
    return args


def choose(api, body, workdir, path=""):
    """('text', str) or ('tool', name, args) or ('json', value)."""
    tools = tools_of(api, body)
    if last_is_tool_result(api, body):
        return ("text", FINAL_TEXT)
    by_name = dict(tools)
    for wanted in WRITE_TOOLS:
        if wanted in by_name:
            return ("tool", wanted, tool_args(wanted, by_name[wanted], workdir))
    for wanted in SHELL_TOOLS + ["local_shell"]:
        if wanted in by_name:
            return ("tool", wanted, tool_args(wanted, by_name[wanted], workdir))
    if tools:
        sys.stderr.write("fake: no write or shell tool among %s\n" % [n for n, _ in tools])
    schema = None
    if api == "gemini":
        gen = body.get("generationConfig") or {}
        schema = gen.get("responseJsonSchema") or gen.get("responseSchema")
        if schema is None and gen.get("responseMimeType") == "application/json":
            schema = {"type": "object"}
    elif api in ("chat", "responses"):
        fmt = body.get("response_format") or (body.get("text") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
    if schema is not None:
        return ("json", fill_schema(schema))
    system = json.dumps(body.get("system") or body.get("messages") or body.get("input") or "")
    if "SEARCH/REPLACE" in system or "ORIGINAL/UPDATED" in system:
        # aider's editblock format: a new file is a SEARCH/REPLACE block with an empty SEARCH.
        block = ("I will create the file.\n\n{}\n```\n<<<<<<< SEARCH\n=======\n{}>>>>>>> REPLACE\n```\n"
                 .format(FILE_NAME, FILE_CONTENT))
        return ("text", block)
    if "*file listing*" in system:
        return ("text", "{}\n```\n{}```\n".format(FILE_NAME, FILE_CONTENT))
    return ("text", "Fake title")


def reply_text(choice):
    if choice[0] == "json":
        return json.dumps(choice[1])
    return choice[1]


# --- writing the answer, per API ---------------------------------------------------------

def sse(event, data):
    if event is None:
        return "data: {}\n\n".format(data if isinstance(data, str) else json.dumps(data))
    return "event: {}\ndata: {}\n\n".format(event, json.dumps(data))


def anthropic_stream(choice, model, n):
    tool = choice[0] == "tool"
    usage = {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": 1}
    out = [sse("message_start", {"type": "message_start", "message": {
        "id": "msg_fake%08d" % n, "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    if tool:
        block = {"type": "tool_use", "id": "toolu_fake%08d" % n, "name": choice[1], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(json.dumps(choice[2]))]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in pieces(reply_text(choice))]
    out.append(sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}))
    out.append(sse("ping", {"type": "ping"}))
    for d in deltas:
        out.append(sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}))
    out.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
                                     "usage": {"output_tokens": 20 if tool else 5}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return out


def anthropic_message(choice, model, n):
    tool = choice[0] == "tool"
    content = ([{"type": "tool_use", "id": "toolu_fake%08d" % n, "name": choice[1], "input": choice[2]}]
               if tool else [{"type": "text", "text": reply_text(choice)}])
    return {"id": "msg_fake%08d" % n, "type": "message", "role": "assistant", "model": model,
            "content": content, "stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": 20 if tool else 5}}


def responses_item(choice, n, done):
    status = "completed" if done else "in_progress"
    if choice[0] == "tool":
        name, args = choice[1], choice[2]
        if args == "__custom__":
            pass
        return {"id": "fc_fake%08d" % n, "type": "function_call", "status": status,
                "call_id": "call_fake%08d" % n, "name": name,
                "arguments": json.dumps(args) if done else ""}
    text = reply_text(choice)
    return {"id": "msg_fake%08d" % n, "type": "message", "status": status, "role": "assistant",
            "content": [{"type": "output_text", "annotations": [], "text": text}] if done else []}


def responses_object(choice, model, n, done=True):
    out = 20 if choice[0] == "tool" else 5
    return {"id": "resp_fake%08d" % n, "object": "response", "created_at": 1700000000,
            "status": "completed" if done else "in_progress", "model": model,
            "output": [responses_item(choice, n, True)] if done else [],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": out, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": 10 + out} if done else None}


def responses_stream(choice, model, n):
    item_id = responses_item(choice, n, False)["id"]
    bodies = [("response.created", {"response": responses_object(choice, model, n, False)}),
              ("response.in_progress", {"response": responses_object(choice, model, n, False)}),
              ("response.output_item.added", {"output_index": 0, "item": responses_item(choice, n, False)})]
    if choice[0] == "tool":
        arguments = json.dumps(choice[2])
        for p in pieces(arguments):
            bodies.append(("response.function_call_arguments.delta",
                           {"item_id": item_id, "output_index": 0, "delta": p}))
        bodies.append(("response.function_call_arguments.done",
                       {"item_id": item_id, "output_index": 0, "arguments": arguments}))
    else:
        text = reply_text(choice)
        part = lambda t: {"type": "output_text", "annotations": [], "text": t}
        bodies.append(("response.content_part.added",
                       {"item_id": item_id, "output_index": 0, "content_index": 0, "part": part("")}))
        for p in pieces(text):
            bodies.append(("response.output_text.delta",
                           {"item_id": item_id, "output_index": 0, "content_index": 0, "delta": p}))
        bodies.append(("response.output_text.done",
                       {"item_id": item_id, "output_index": 0, "content_index": 0, "text": text}))
        bodies.append(("response.content_part.done",
                       {"item_id": item_id, "output_index": 0, "content_index": 0, "part": part(text)}))
    bodies.append(("response.output_item.done", {"output_index": 0, "item": responses_item(choice, n, True)}))
    bodies.append(("response.completed", {"response": responses_object(choice, model, n, True)}))
    out = []
    for seq, (name, body) in enumerate(bodies):
        body["type"] = name
        body["sequence_number"] = seq
        out.append(sse(name, body))
    return out


def chat_usage(choice):
    out = 20 if choice[0] == "tool" else 5
    return {"prompt_tokens": 10, "completion_tokens": out, "total_tokens": 10 + out,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0}}


def chat_stream(choice, model, n, include_usage):
    def chunk(choices, usage=None):
        c = {"id": "chatcmpl-fake%08d" % n, "object": "chat.completion.chunk", "created": 1700000000,
             "model": model, "choices": choices}
        if include_usage:
            c["usage"] = usage
        return sse(None, c)

    def delta(d, finish=None):
        return [{"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}]

    out = [chunk(delta({"role": "assistant", "content": ""}))]
    if choice[0] == "tool":
        out.append(chunk(delta({"tool_calls": [{"index": 0, "id": "call_fake%08d" % n, "type": "function",
                                                "function": {"name": choice[1], "arguments": ""}}]})))
        for p in pieces(json.dumps(choice[2])):
            out.append(chunk(delta({"tool_calls": [{"index": 0, "function": {"arguments": p}}]})))
        out.append(chunk(delta({}, "tool_calls")))
    else:
        for p in pieces(reply_text(choice)):
            out.append(chunk(delta({"content": p})))
        out.append(chunk(delta({}, "stop")))
    if include_usage:
        out.append(chunk([], chat_usage(choice)))
    out.append(sse(None, "[DONE]"))
    return out


def chat_object(choice, model, n):
    if choice[0] == "tool":
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_fake%08d" % n, "type": "function",
            "function": {"name": choice[1], "arguments": json.dumps(choice[2])}}]}
    else:
        message = {"role": "assistant", "content": reply_text(choice)}
    return {"id": "chatcmpl-fake%08d" % n, "object": "chat.completion", "created": 1700000000, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if choice[0] == "tool" else "stop"}],
            "usage": chat_usage(choice)}


def gemini_chunks(choice, model):
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 20 if choice[0] == "tool" else 5,
             "totalTokenCount": 30 if choice[0] == "tool" else 15}
    if choice[0] == "tool":
        parts_list = [[{"functionCall": {"name": choice[1], "args": choice[2]}}]]
    else:
        parts_list = [[{"text": p}] for p in pieces(reply_text(choice), 24)]
    out = []
    for i, parts in enumerate(parts_list):
        last = i == len(parts_list) - 1
        cand = {"content": {"role": "model", "parts": parts}, "index": 0}
        if last:
            cand["finishReason"] = "STOP"
        c = {"candidates": [cand], "modelVersion": model, "responseId": "fake%d" % i}
        c["usageMetadata"] = usage if last else {"promptTokenCount": 10, "totalTokenCount": 10}
        out.append(c)
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if ARGS.verbose:
            sys.stderr.write("fake: " + (fmt % args) + "\n")

    def record(self, entry):
        if ARGS.log:
            with LOCK, open(ARGS.log, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def send_json(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events, request_id_header="x-request-id", n=0):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header(request_id_header, "req_fake%08d" % n)
        self.send_header("connection", "close")
        self.end_headers()
        for e in events:
            self.wfile.write(e.encode())
            self.wfile.flush()
            time.sleep(ARGS.delay)
        self.close_connection = True

    def do_GET(self):
        url = urlparse(self.path)
        self.record({"method": "GET", "path": self.path, "headers": dict(self.headers)})
        if url.path.endswith("/models"):
            self.send_json(200, {"object": "list", "data": [
                {"id": ARGS.model, "type": "model", "object": "model", "display_name": ARGS.model,
                 "created": 1700000000, "owned_by": "fake"}],
                "models": [{"name": "models/" + ARGS.model, "displayName": ARGS.model,
                            "supportedGenerationMethods": ["generateContent"]}],
                "has_more": False, "first_id": ARGS.model, "last_id": ARGS.model})
            return
        self.send_json(404, {"error": {"message": "no route " + self.path, "type": "not_found"}})

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self):
        url = urlparse(self.path)
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("content-encoding") in ("gzip",):
            import gzip
            raw = gzip.decompress(raw)
        elif self.headers.get("content-encoding") in ("zstd",):
            self.send_json(415, {"error": {"message": "zstd not supported by the fake"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw[:2000].decode("utf-8", "replace")}
        p = url.path
        if p.endswith("/messages/count_tokens"):
            api = "count"
        elif p.endswith("/messages"):
            api = "messages"
        elif p.endswith("/responses"):
            api = "responses"
        elif p.endswith("/chat/completions"):
            api = "chat"
        elif ":streamGenerateContent" in p or ":generateContent" in p:
            api = "gemini"
        elif ":countTokens" in p:
            api = "gcount"
        elif p.endswith(":embedContent") or p.endswith("/embeddings"):
            api = "embed"
        else:
            api = None
        n = next_id()
        entry = {"n": n, "method": "POST", "path": self.path, "api": api, "headers": dict(self.headers),
                 "body": body}
        if api is None:
            entry["reply"] = "404"
            self.record(entry)
            self.send_json(404, {"error": {"message": "no route " + self.path, "type": "not_found"}})
            return
        if api == "count":
            self.record(entry)
            self.send_json(200, {"input_tokens": 10})
            return
        if api == "gcount":
            self.record(entry)
            self.send_json(200, {"totalTokens": 10})
            return
        if api == "embed":
            self.record(entry)
            self.send_json(200, {"embedding": {"values": [0.0] * 8}, "data": [{"embedding": [0.0] * 8}]})
            return
        model = body.get("model") or (p.split("/models/")[-1].split(":")[0] if "/models/" in p else ARGS.model)
        choice = choose(api, body, ARGS.workdir, p)
        entry["reply"] = list(choice)
        self.record(entry)
        if api == "messages":
            if body.get("stream"):
                self.send_sse(anthropic_stream(choice, model, n), "request-id", n)
            else:
                self.send_json(200, anthropic_message(choice, model, n))
        elif api == "responses":
            if body.get("stream"):
                self.send_sse(responses_stream(choice, model, n), "x-request-id", n)
            else:
                self.send_json(200, responses_object(choice, model, n))
        elif api == "chat":
            if body.get("stream"):
                include = bool((body.get("stream_options") or {}).get("include_usage"))
                self.send_sse(chat_stream(choice, model, n, include), "x-request-id", n)
            else:
                self.send_json(200, chat_object(choice, model, n))
        elif api == "gemini":
            chunks = gemini_chunks(choice, model)
            if ":streamGenerateContent" in p:
                if parse_qs(url.query).get("alt") == ["sse"]:
                    self.send_sse([sse(None, c) for c in chunks], "x-request-id", n)
                else:
                    self.send_json(200, chunks)
            else:
                merged = chunks[-1]
                if choice[0] != "tool":
                    merged["candidates"][0]["content"]["parts"] = [{"text": reply_text(choice)}]
                self.send_json(200, merged)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log", default=None)
    ap.add_argument("--workdir", default=os.getcwd(), help="where the CLI runs: hello.txt goes there")
    ap.add_argument("--model", default="fake-model")
    ap.add_argument("--port-file", default=None)
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--delay", type=float, default=float(os.environ.get("FAKE_DELAY", "0.005")),
                    help="seconds between streamed events (FAKE_DELAY), to test cancellation")
    ARGS = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    port = server.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file, "w") as f:
            f.write(str(port))
    sys.stderr.write("fake provider on http://127.0.0.1:%d\n" % port)
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
