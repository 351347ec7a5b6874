// llmserve's OpenAI-compatible HTTP API through the official `openai` npm client (pinned in
// package.json / package-lock.json), run by run_openai_sdk_test.sh with `node --test`.
//
// Servers (started by the script, stories260K with a ChatML template):
//   LLMSERVE_URL        the main one, with an API key (LLMSERVE_API_KEY)
//   LLMSERVE_SMALL_URL  --max-running 1 --max-waiting 1, no keys: the waiting queue fills (429)
//   LLMSERVE_DRAIN_URL  --drain-delay 3 (pid LLMSERVE_DRAIN_PID): SIGTERMed by the last test
// Expected values come from the server itself (a greedy run, its usage), never from constants.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import OpenAI from 'openai';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run tests/openai/run_openai_sdk_test.sh)`);
  return v;
};
const BASE = env('LLMSERVE_URL');
const KEY = env('LLMSERVE_API_KEY');
const MODEL = env('LLMSERVE_MODEL');
const client = new OpenAI({ baseURL: BASE, apiKey: KEY, maxRetries: 0, timeout: 60_000 });
const PROMPT = 'Once upon a time, there was a little';
const CHAT = [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'Tell me about a cat.' }];

// Awaits `promise`, which must reject with an APIError of `status`; returns the error.
async function rejectsWith(promise, status) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `expected an APIError, got ${e}`);
    assert.equal(e.status, status, `status of ${e.message}`);
    assert.equal(typeof e.error?.message, 'string', 'the body is an OpenAI error object');
    return e;
  }
  assert.fail(`expected HTTP ${status}, the request succeeded`);
}

// Everything a completions stream delivered.
async function collectCompletionStream(stream) {
  let text = '', finish = null, usage = null, chunks = 0, id = null;
  for await (const chunk of stream) {
    ++chunks;
    id ??= chunk.id;
    assert.equal(chunk.id, id, 'every chunk has the same id');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      text += c.text;
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, chunks };
}

async function collectChatStream(stream) {
  let text = '', finish = null, usage = null, role = null, logprobs = [];
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      role ??= c.delta.role ?? null;
      text += c.delta.content ?? '';
      if (c.logprobs?.content) logprobs = logprobs.concat(c.logprobs.content);
      if (c.finish_reason) finish = c.finish_reason;
    }
  }
  return { text, finish, usage, role, logprobs };
}

describe('completions', () => {
  test('greedy: the body, usage and finish reason', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 24, temperature: 0, ignore_eos: true });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.model, MODEL);
    assert.match(r.id, /^cmpl-/);
    assert.ok(Math.abs(r.created - Date.now() / 1000) < 120, `created ${r.created}`);
    assert.equal(r.choices.length, 1);
    assert.equal(r.choices[0].finish_reason, 'length');
    assert.ok(r.choices[0].text.length > 0);
    assert.equal(r.usage.completion_tokens, 24);
    assert.ok(r.usage.prompt_tokens > 0);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  test('streamed equals whole, and include_usage adds the usage chunk', async () => {
    const whole = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 32, temperature: 0 });
    const streamed = await collectCompletionStream(await client.completions.create({
      model: MODEL, prompt: PROMPT, max_tokens: 32, temperature: 0, stream: true, stream_options: { include_usage: true },
    }));
    assert.equal(streamed.text, whole.choices[0].text);
    assert.equal(streamed.finish, whole.choices[0].finish_reason);
    assert.ok(streamed.chunks > 2, `${streamed.chunks} chunks`);
    assert.deepEqual(streamed.usage, whole.usage);
    const plain = await collectCompletionStream(await client.completions.create({
      model: MODEL, prompt: PROMPT, max_tokens: 8, temperature: 0, stream: true,
    }));
    assert.equal(plain.usage, null, 'no usage chunk without include_usage');
  });

  test('a prompt as token ids gives what its text gives', async () => {
    const ids = JSON.parse(env('LLMSERVE_PROMPT_IDS'));  // PROMPT tokenized by the server (llmctl tokenize)
    const text = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 16, temperature: 0 });
    const byIds = await client.completions.create({ model: MODEL, prompt: ids, max_tokens: 16, temperature: 0 });
    assert.equal(byIds.usage.prompt_tokens, ids.length);
    assert.equal(text.usage.prompt_tokens, ids.length);
    assert.equal(byIds.choices[0].text, text.choices[0].text);
  });

  test('logprobs: one entry per token, top-n ordered, the greedy choice on top', async () => {
    const r = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 12, temperature: 0, logprobs: 3 });
    const lp = r.choices[0].logprobs;
    assert.equal(lp.tokens.length, r.usage.completion_tokens);
    assert.equal(lp.token_logprobs.length, lp.tokens.length);
    assert.equal(lp.top_logprobs.length, lp.tokens.length);
    assert.equal(lp.tokens.join(''), r.choices[0].text);
    for (let i = 0; i < lp.tokens.length; ++i) {
      assert.ok(lp.token_logprobs[i] <= 0);
      const top = Object.values(lp.top_logprobs[i]);
      assert.ok(top.length >= 1 && top.length <= 3);
      assert.ok(Math.abs(Math.max(...top) - lp.token_logprobs[i]) < 1e-6, 'greedy picks the most likely token');
      if (i > 0) assert.equal(lp.text_offset[i], lp.text_offset[i - 1] + Buffer.byteLength(lp.tokens[i - 1]));
    }
  });

  test('a stop string cuts the text before it', async () => {
    const full = (await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 48, temperature: 0, ignore_eos: true }))
      .choices[0].text;
    const words = full.split(' ').filter((w) => w.length >= 3);
    assert.ok(words.length >= 3, `too few words in ${JSON.stringify(full)}`);
    const stop = ' ' + words[2];
    const cut = full.slice(0, full.indexOf(stop));
    for (const stream of [false, true]) {
      const req = { model: MODEL, prompt: PROMPT, max_tokens: 48, temperature: 0, ignore_eos: true, stop: [stop, 'zzzz'] };
      const got = stream ? await collectCompletionStream(await client.completions.create({ ...req, stream: true }))
                         : await client.completions.create(req).then((r) => ({ text: r.choices[0].text, finish: r.choices[0].finish_reason }));
      assert.equal(got.text, cut, `stream ${stream}`);
      assert.equal(got.finish, 'stop');
    }
  });

  test('seeds: the same seed gives the same text, other seeds other texts', async () => {
    const run = (seed) => client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 40, temperature: 1, seed, ignore_eos: true })
      .then((r) => r.choices[0].text);
    const a = await run(1234), b = await run(1234);
    assert.equal(a, b);
    const others = await Promise.all([1, 2, 3, 4].map(run));
    assert.ok(others.some((t) => t !== a), 'four other seeds all gave the same text');
    const streamed = await collectCompletionStream(await client.completions.create({
      model: MODEL, prompt: PROMPT, max_tokens: 40, temperature: 1, seed: 1234, ignore_eos: true, stream: true,
    }));
    assert.equal(streamed.text, a);
  });

  test('logit_bias +100 forces a token, -100 bans it', async () => {
    const ids = JSON.parse(env('LLMSERVE_PROMPT_IDS'));
    const forcedId = ids[ids.length - 1];  // a token of PROMPT ("little" or a piece of it)
    const forced = await client.completions.create({
      model: MODEL, prompt: PROMPT, max_tokens: 4, temperature: 0.8, seed: 3, logprobs: 0, logit_bias: { [forcedId]: 100 },
    });
    const tokens = forced.choices[0].logprobs.tokens;
    assert.equal(tokens.length, 4);
    assert.ok(tokens.every((t) => t === tokens[0]), JSON.stringify(tokens));
    assert.ok(PROMPT.includes(tokens[0].trim()), `${JSON.stringify(tokens[0])} is not a piece of the prompt`);
    const banned = await client.completions.create({
      model: MODEL, prompt: PROMPT, max_tokens: 24, temperature: 1, seed: 5, logprobs: 0,
      logit_bias: { [forcedId]: -100 }, ignore_eos: true,
    });
    assert.ok(!banned.choices[0].logprobs.tokens.includes(tokens[0]), 'a banned token was generated');
  });

  test('a repeated prompt reports cached tokens', async () => {
    const long = `${PROMPT} ${'girl named Lily who liked to play in the park. '.repeat(8)}`;
    const salt = `salt-${process.pid}-${Date.now()}`;
    const a = await client.completions.create({ model: MODEL, prompt: long, max_tokens: 4, temperature: 0, cache_salt: salt });
    const b = await client.completions.create({ model: MODEL, prompt: long, max_tokens: 4, temperature: 0, cache_salt: salt });
    assert.equal(a.usage.prompt_tokens_details.cached_tokens, 0);
    assert.ok(b.usage.prompt_tokens_details.cached_tokens > 0, JSON.stringify(b.usage));
    assert.equal(b.choices[0].text, a.choices[0].text);
  });
});

describe('chat completions', () => {
  test('whole and streamed give the same message', async () => {
    const whole = await client.chat.completions.create({ model: MODEL, messages: CHAT, max_completion_tokens: 24, temperature: 0 });
    assert.equal(whole.object, 'chat.completion');
    assert.match(whole.id, /^chatcmpl-/);
    const msg = whole.choices[0].message;
    assert.equal(msg.role, 'assistant');
    assert.ok(msg.content.length > 0);
    assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
    const streamed = await collectChatStream(await client.chat.completions.create({
      model: MODEL, messages: CHAT, max_tokens: 24, temperature: 0, stream: true, stream_options: { include_usage: true },
    }));
    assert.equal(streamed.role, 'assistant');
    assert.equal(streamed.text, msg.content);
    assert.equal(streamed.finish, whole.choices[0].finish_reason);
    // The same counts; the second run's prompt came from the prefix cache.
    assert.equal(streamed.usage.prompt_tokens, whole.usage.prompt_tokens);
    assert.equal(streamed.usage.completion_tokens, whole.usage.completion_tokens);
    assert.ok(streamed.usage.prompt_tokens_details.cached_tokens > 0);
  });

  test('text parts are joined like a string content', async () => {
    const parts = [{ role: 'user', content: [{ type: 'text', text: 'Tell me about a cat.' }] }];
    const a = await client.chat.completions.create({ model: MODEL, messages: parts, max_tokens: 8, temperature: 0 });
    const b = await client.chat.completions.create({ model: MODEL, messages: [CHAT[1]], max_tokens: 8, temperature: 0 });
    assert.equal(a.choices[0].message.content, b.choices[0].message.content);
    assert.equal(a.usage.prompt_tokens, b.usage.prompt_tokens);
  });

  test('logprobs with top_logprobs, streamed and not', async () => {
    const req = { model: MODEL, messages: CHAT, max_tokens: 10, temperature: 0, logprobs: true, top_logprobs: 3, ignore_eos: true };
    const r = await client.chat.completions.create(req);
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, r.usage.completion_tokens);
    for (const t of content) {
      assert.equal(t.top_logprobs.length, 3);
      assert.ok(t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob);
      assert.equal(t.top_logprobs[0].token, t.token);
      assert.deepEqual(Buffer.from(t.bytes).toString('utf8'), t.token);
    }
    const streamed = await collectChatStream(await client.chat.completions.create({ ...req, stream: true }));
    assert.deepEqual(streamed.logprobs, content);
  });

  test('seeded chat repeats', async () => {
    const run = () => client.chat.completions.create({ model: MODEL, messages: CHAT, max_tokens: 24, temperature: 0.9, seed: 7 })
      .then((r) => r.choices[0].message.content);
    assert.equal(await run(), await run());
  });
});

describe('models and health', () => {
  test('GET /v1/models lists the served model', async () => {
    const list = await client.models.list();
    assert.deepEqual(list.data.map((m) => m.id), [MODEL]);
    const one = await client.models.retrieve(MODEL);
    assert.equal(one.id, MODEL);
    assert.equal(one.object, 'model');
  });

  test('GET /health needs no key', async () => {
    const r = await fetch(new URL('../health', BASE + '/'));
    assert.equal(r.status, 200);
  });
});

describe('errors', () => {
  test('400 names the field', async () => {
    const cases = [
      [{ temperature: -1 }, 'temperature'], [{ top_p: 1.5 }, 'top_p'], [{ n: 2 }, 'n'], [{ max_tokens: 0 }, 'max_tokens'],
      [{ logprobs: 21 }, 'logprobs'], [{ stop: [''] }, 'stop'], [{ presence_penalty: 3 }, 'presence_penalty'],
      [{ max_tokens: 100000 }, 'max_tokens'], [{ logit_bias: { 99999: 1 } }, 'logit_bias'], [{ prompt: '' }, 'prompt'],
    ];
    for (const [fields, param] of cases) {
      const e = await rejectsWith(client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4, ...fields }), 400);
      assert.ok(e instanceof OpenAI.BadRequestError);
      assert.equal(e.param, param, `${JSON.stringify(fields)}: ${e.message}`);
      assert.equal(e.type, 'invalid_request_error');
    }
    const chat = await rejectsWith(client.chat.completions.create({ model: MODEL, messages: [], max_tokens: 4 }), 400);
    assert.equal(chat.param, 'messages');
    const top = await rejectsWith(client.chat.completions.create({ model: MODEL, messages: CHAT, top_logprobs: 2 }), 400);
    assert.equal(top.param, 'top_logprobs');
    const n = await rejectsWith(client.chat.completions.create({ model: MODEL, messages: CHAT, n: 3 }), 400);
    assert.match(n.message, /n must be 1/);
  });

  test('401 without a valid key', async () => {
    const wrong = new OpenAI({ baseURL: BASE, apiKey: 'not-the-key-0123456789', maxRetries: 0 });
    const e = await rejectsWith(wrong.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 2 }), 401);
    assert.ok(e instanceof OpenAI.AuthenticationError);
    await rejectsWith(wrong.models.list(), 401);
    const bare = await fetch(`${BASE}/completions`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ prompt: PROMPT }),
    });
    assert.equal(bare.status, 401);
    assert.match((await bare.json()).error.message, /Bearer/);
  });

  test('404 for an unknown model or path', async () => {
    const e = await rejectsWith(client.completions.create({ model: 'gpt-4o', prompt: PROMPT, max_tokens: 2 }), 404);
    assert.ok(e instanceof OpenAI.NotFoundError);
    assert.equal(e.param, 'model');
    await rejectsWith(client.models.retrieve('gpt-4o'), 404);
    await rejectsWith(client.get('/embeddings'), 404);
  });

  test('405, 413, 415 and bad JSON are error objects', async () => {
    const post = (body, type = 'application/json', path = '/completions', method = 'POST') => fetch(`${BASE}${path}`, {
      method, headers: { 'Content-Type': type, Authorization: `Bearer ${KEY}` }, body,
    });
    const expect = async (resPromise, status) => {
      const res = await resPromise;
      assert.equal(res.status, status);
      const body = await res.json();
      assert.equal(typeof body.error.message, 'string');
      return body.error;
    };
    assert.match((await expect(post('{"prompt": '), 400)).message, /JSON/);
    await expect(post('[1, 2]'), 400);
    await expect(post('{"prompt": "x"}', 'text/plain'), 415);
    await expect(post('{"prompt": "' + 'a'.repeat(5 << 20) + '"}'), 413);
    await expect(fetch(`${BASE}/completions`, { headers: { Authorization: `Bearer ${KEY}` } }), 405);
    // The server is still there.
    const ok = await client.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 2 });
    assert.equal(ok.usage.completion_tokens, 2);
  });

  test('429 when the waiting queue is full', async () => {
    const small = new OpenAI({ baseURL: env('LLMSERVE_SMALL_URL'), apiKey: 'unused', maxRetries: 0, timeout: 60_000 });
    const burst = await Promise.allSettled(Array.from({ length: 12 }, () =>
      small.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 400, temperature: 0, ignore_eos: true })));
    const refused = burst.filter((r) => r.status === 'rejected');
    const served = burst.filter((r) => r.status === 'fulfilled');
    // The queue holds one request until its first step: at least that one is served.
    assert.ok(refused.length >= 1, 'nothing was refused');
    assert.ok(served.length >= 1, 'nothing was served');
    for (const r of refused) {
      assert.ok(r.reason instanceof OpenAI.RateLimitError, String(r.reason));
      assert.equal(r.reason.status, 429);
    }
    for (const r of served) assert.equal(r.value.usage.completion_tokens, 400);
  });

  test('503 on /health while draining; the API serves during --drain-delay', async () => {
    const url = env('LLMSERVE_DRAIN_URL');
    const drain = new OpenAI({ baseURL: url, apiKey: 'unused', maxRetries: 0 });
    assert.equal((await fetch(new URL('../health', url + '/'))).status, 200);
    process.kill(Number(env('LLMSERVE_DRAIN_PID')), 'SIGTERM');
    let health = 200;
    for (let i = 0; i < 100 && health === 200; ++i) {
      health = (await fetch(new URL('../health', url + '/'))).status;
      if (health === 200) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(health, 503);
    const body = await (await fetch(new URL('../health', url + '/'))).json();
    assert.match(body.error.message, /draining/);
    const r = await drain.completions.create({ model: MODEL, prompt: PROMPT, max_tokens: 4 });
    assert.equal(r.usage.completion_tokens, 4);
  });
});
