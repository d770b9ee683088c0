// Butterfly's dashboard: polls the coordinator's JSON endpoints once a second and redraws; the chat box streams from
// /v1/chat/completions (OpenAI's chunk format). Plain JavaScript, no build step, nothing fetched from elsewhere.
'use strict';

const POLL_MS = 1000;
const RATE_WINDOW = 60; // seconds of tokens/s kept for the chart
const FAILED_STATES = new Set(['FAILED', 'SHUTDOWN', 'TERMINATED', 'DEGRADED']);

const $ = id => document.getElementById(id);
const rates = [];
let lastServing = null;
let machine = null;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
  }
  children.forEach(c => e.append(c));
  return e;
}

function badge(state) {
  return el('span', {class: 'state s-' + state, text: state});
}

async function getJson(path) {
  const r = await fetch(path, {headers: {Accept: 'application/json'}, cache: 'no-store'});
  if (!r.ok) throw new Error(path + ': ' + r.status);
  return r.json();
}

// --- cluster state ------------------------------------------------------------------------------------------------

function renderState(s) {
  const system = $('system-state');
  system.textContent = s.system_state;
  system.className = 'badge s-' + s.system_state;
  const current = (s.plans || []).find(p => p.epoch === s.epoch);
  const format = current && current.stages.length ? current.stages[0].weight_format : null;
  $('model-id').textContent = (s.model_id || '–') + (format ? ' (' + format + ')' : '');
  $('model-id').dataset.model = s.model_id || '';
  const error = $('model-error');
  error.textContent = s.model_error ? 'the model cannot be served: ' + s.model_error.cause : '';
  error.hidden = !s.model_error;
  $('epoch').textContent = s.epoch;
  $('replica').textContent = s.coordinator;
  renderRaft(s.raft || {});
  const workers = (s.nodes || []).filter(n => n.role !== 'coordinator');
  renderNodes(s, workers);
  renderLayerMap(s, workers);
  renderDiagram(s.system_state);
}

function renderRaft(r) {
  $('raft-leader').textContent = r.leader_id || 'none';
  $('raft-term').textContent = r.term ?? '–';
  $('raft-role').textContent = (r.self_id || '') + ' ' + (r.role || '');
  $('raft-index').textContent = r.last_applied_index ?? '–';
  const list = $('raft-replicas');
  list.replaceChildren(...(r.peers || []).map(p => {
    const id = typeof p === 'string' ? p.split('=')[0] : (p.id || p.peer_id || JSON.stringify(p));
    const li = el('li', {text: id === r.leader_id ? id + ' ★ leader' : id});
    if (id === r.leader_id) li.className = 'leader';
    return li;
  }));
}

function renderNodes(s, workers) {
  const coordinators = (s.raft && s.raft.peers || []).map(p => {
    const id = typeof p === 'string' ? p.split('=')[0] : (p.id || p.peer_id);
    return {id, role: 'coordinator', state: id === s.raft.leader_id ? 'LEADER' : 'FOLLOWER', address: p.address || ''};
  });
  const rows = [...coordinators, ...workers].map(n => {
    const tr = el('tr', {'data-node': n.id});
    const load = n.progress != null && n.partition_state && n.partition_state !== 'READY'
      ? n.partition_state + ' ' + Math.round(n.progress * 100) + '%' : (n.partition_state || '');
    // A FAILED worker says why (hover); one an audit caught computing wrong says so beside its state.
    const state = el('td', {class: 'state-cell', title: n.failure_cause || ''}, badge(n.state));
    if (n.byzantine) state.append(el('small', {class: 'byzantine', text: ' Byzantine'}));
    tr.append(el('td', {text: n.id}), el('td', {text: n.role}), state,
      el('td', {text: n.address || ''}), el('td', {text: layers(n)}), el('td', {text: load}),
      el('td', {text: heartbeat(n)}));
    return tr;
  });
  $('node-rows').replaceChildren(...rows);
}

function layers(n) {
  // A spare holds no layers until it takes a lost or drained stage; a node out of the plan no longer serves its old range.
  if (n.standing === 'spare') return n.draining ? 'spare, draining' : 'standby spare';
  if (n.standing === 'none') return n.draining ? 'drained' : '';
  if (!n.layer_range) return '';
  const r = n.layer_range;
  const text = Array.isArray(r) ? '[' + r[0] + ', ' + r[1] + ')' : (typeof r === 'string' ? r : '[' + r.start + ', ' + r.end + ')');
  return text + (n.has_embedding ? ' +embed' : '') + (n.has_head ? ' +head' : '') + (n.draining ? ' · draining' : '');
}

function heartbeat(n) {
  if (!n.last_heartbeat) return '';
  const ago = (Date.now() - Date.parse(n.last_heartbeat)) / 1000;
  return isNaN(ago) ? String(n.last_heartbeat) : ago.toFixed(1) + ' s ago' + (n.phi != null ? ' · φ ' + Number(n.phi).toFixed(1) : '');
}

function range(n) {
  const r = n.layer_range;
  if (!r) return null;
  if (Array.isArray(r)) return r;
  if (typeof r === 'string') { const m = r.match(/(\d+)\D+(\d+)/); return m ? [+m[1], +m[2]] : null; }
  return [r.start, r.end];
}

/**
 * The pipelines (docs/scale-out.md), one row each: its stages in order, each as wide as its layers, and whether it
 * serves now; then the spares. Before the first plan (or from an older coordinator without `pipelines`), the one
 * pipeline `pipeline` lists, or every worker holding layers.
 */
function pipelineRows(s, workers) {
  const byId = Object.fromEntries(workers.map(w => [w.id, w]));
  const listed = (s.pipelines || []).filter(p => (p.stages || []).length);
  if (listed.length) {
    return listed.map(p => ({index: p.index, serving: p.serving, stages: p.stages.map(id => byId[id]).filter(Boolean)}));
  }
  const stages = (s.pipeline || []).map(id => byId[id]).filter(Boolean);
  return [{index: 0, serving: null, stages: stages.length ? stages : workers.filter(w => range(w))}];
}

function renderLayerMap(s, workers) {
  const rows = pipelineRows(s, workers);
  const several = rows.length > 1;
  $('pipeline-title').textContent = several ? rows.length + ' pipelines: layers by worker' : 'Pipeline: layers by worker';
  const all = rows.flatMap(r => r.stages);
  const total = Math.max(1, ...all.map(w => (range(w) || [0, 0])[1]));
  $('layer-map').replaceChildren(...rows.map(r => {
    const stages = el('div', {class: 'stages'}, ...r.stages.map(w => stageBox(w)));
    if (!r.stages.length) stages.append(el('div', {class: 'stage', text: 'no layers assigned yet'}));
    const row = el('div', {class: 'pipeline-row' + (r.serving === false ? ' held' : ''), 'data-pipeline': r.index});
    if (several || r.serving != null) {
      const serving = r.serving == null ? '' : r.serving ? 'serving' : 'not serving';
      row.append(el('div', {class: 'pipeline-label'}, el('b', {text: 'pipeline ' + r.index}),
        el('small', {class: 'serving', text: serving})));
    }
    row.append(stages);
    return row;
  }));
  $('layer-axis').replaceChildren(el('span', {text: 'layer 0'}), el('span', {text: 'layer ' + total}));
  const spares = s.spares || [];
  $('spares').textContent = spares.length ? 'spares: ' + spares.join(', ') : '';
}

function stageBox(w) {
  const [start, end] = range(w) || [0, 0];
  const div = el('div', {class: 'stage' + (FAILED_STATES.has(w.state) ? ' failed' : ''), 'data-stage': w.id,
    title: w.id + ' holds layers [' + start + ', ' + end + ')'});
  div.style.flex = String(Math.max(1, end - start));
  const progress = w.partition_state === 'READY' ? 1 : (w.progress || 0);
  div.append(el('b', {text: w.id}), el('small', {text: layers(w) + ' · ' + (w.partition_state || w.state)}),
    Object.assign(el('span', {class: 'progress'}), {style: 'width:' + Math.round(progress * 100) + '%'}));
  return div;
}

// --- state diagram: states in columns by their distance from the initial state -------------------------------

function renderDiagram(current) {
  if (!machine) return;
  const svg = $('state-diagram');
  if (!svg.dataset.drawn) drawDiagram(svg);
  svg.querySelectorAll('g.node').forEach(g => {
    const on = g.dataset.state === current;
    g.classList.toggle('current', on);
    g.classList.toggle('bad', on && FAILED_STATES.has(current));
  });
}

function drawDiagram(svg) {
  const edges = machine.transitions.map(t => ({...t, deviation: false}))
    .concat((machine.deviations || []).map(d => ({from: d.from, to: d.to, trigger: d.reason, deviation: true})));
  const depth = {[machine.initial]: 0};
  for (let changed = true; changed;) {
    changed = false;
    for (const e of edges) {
      if (depth[e.from] != null && (depth[e.to] == null || depth[e.to] > depth[e.from] + 1)) {
        depth[e.to] = depth[e.from] + 1; changed = true;
      }
    }
  }
  const columns = [];
  machine.states.forEach(s => (columns[depth[s] ?? 0] ||= []).push(s));
  const W = 110, H = 30, GX = 36, GY = 22;
  const pos = {};
  columns.forEach((col, c) => col.forEach((s, r) => { pos[s] = {x: c * (W + GX) + 4, y: r * (H + GY) + 14}; }));
  const width = columns.length * (W + GX), height = Math.max(...columns.map(c => c.length)) * (H + GY) + 20;
  svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
  const ns = 'http://www.w3.org/2000/svg';
  const make = (tag, attrs) => { const e = document.createElementNS(ns, tag); for (const k in attrs) e.setAttribute(k, attrs[k]); return e; };
  const defs = make('defs', {});
  const marker = make('marker', {id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: 'auto'});
  marker.append(make('path', {d: 'M0,0 L10,5 L0,10 z'}));
  defs.append(marker);
  svg.replaceChildren(defs);
  for (const e of edges) {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) continue;
    const forward = b.x > a.x;
    const x1 = forward ? a.x + W : a.x + W / 2, y1 = forward ? a.y + H / 2 : a.y + H;
    const x2 = forward ? b.x : b.x + W / 2, y2 = forward ? b.y + H / 2 : b.y + H;
    const bend = forward ? (b.y - a.y) / 4 : 40 + Math.abs(a.x - b.x) / 6;
    const d = forward ? `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2 + bend / 4} ${x2},${y2}`
      : `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 + bend} ${x2},${y2}`;
    const path = make('path', {d, class: e.deviation ? 'deviation' : ''});
    const title = make('title', {});
    title.textContent = e.from + ' → ' + e.to + ': ' + e.trigger;
    path.append(title);
    svg.append(path);
  }
  for (const s of machine.states) {
    const p = pos[s];
    const g = make('g', {class: 'node', 'data-state': s});
    g.append(make('rect', {x: p.x, y: p.y, width: W, height: H}));
    const t = make('text', {x: p.x + W / 2, y: p.y + H / 2});
    t.textContent = s;
    g.append(t);
    svg.append(g);
  }
  svg.dataset.drawn = '1';
}

// --- serving figures ------------------------------------------------------------------------------------------

function renderServing(v) {
  if (lastServing && v.at_ms > lastServing.at_ms) {
    const rate = Math.max(0, (v.generated_tokens - lastServing.generated_tokens) / ((v.at_ms - lastServing.at_ms) / 1000));
    rates.push(rate);
    if (rates.length > RATE_WINDOW) rates.shift();
    $('tokens-per-second').textContent = rate.toFixed(1);
  }
  lastServing = v;
  $('running').textContent = v.running;
  $('waiting').textContent = v.waiting;
  $('generated').textContent = v.generated_tokens;
  const max = Math.max(1, ...rates);
  const points = rates.map((r, i) => (i * 300 / (RATE_WINDOW - 1)).toFixed(1) + ',' + (58 - r / max * 54).toFixed(1));
  const ns = 'http://www.w3.org/2000/svg';
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', points.join(' '));
  $('rate-chart').replaceChildren(line);
  $('kv-usage').replaceChildren(...Object.entries(v.kv_cache_usage || {}).map(([worker, share]) => {
    const bar = el('span', {class: 'bar'}, Object.assign(el('i'), {style: 'width:' + Math.round(share * 100) + '%'}));
    return el('div', {class: 'kv'}, el('span', {text: 'KV ' + worker}), bar, el('span', {text: Math.round(share * 100) + '%'}));
  }));
}

function renderTransitions(list) {
  $('transition-rows').replaceChildren(...list.slice(0, 12).map(t => el('tr', {},
    el('td', {text: t.atMs ? new Date(t.atMs).toLocaleTimeString() : ''}),
    el('td', {text: t.machine}), el('td', {text: t.entityId}),
    el('td', {}, badge(t.from), ' → ', badge(t.to)), el('td', {text: t.trigger}))));
}

// batch jobs' progress (docs/jobs.md): positions of the steps begun, from the replicated state
function renderJobs(list) {
  const rows = list.map(j => {
    const p = j.progress || {};
    return el('tr', {}, el('td', {text: j.id}), el('td', {text: j.samples}), el('td', {text: j.batch_size}),
      el('td', {text: p.done}), el('td', {text: p.leased}), el('td', {text: p.pending}), el('td', {text: p.results}),
      el('td', {text: (p.results_per_second ?? 0).toFixed(2)}));
  });
  $('job-rows').replaceChildren(...(rows.length ? rows : [el('tr', {}, el('td', {text: 'none defined'}))]));
}

async function poll() {
  try {
    const [state, serving, transitions, jobs] = await Promise.all([getJson('/api/v1/system/state'),
      getJson('/api/v1/serving'), getJson('/api/v1/system/transitions?limit=12'),
      getJson('/api/v1/jobs').catch(() => ({jobs: []}))]);
    renderJobs(jobs.jobs || []);
    if (!machine) machine = await getJson('/api/v1/system/machines/system');
    renderState(state);
    renderServing(serving);
    renderTransitions(transitions.transitions || []);
    $('connection').textContent = 'live · updated ' + new Date().toLocaleTimeString();
  } catch (e) {
    $('connection').textContent = 'cannot reach the coordinator (' + e.message + ')';
  } finally {
    setTimeout(poll, POLL_MS);
  }
}

// --- chat: OpenAI's streamed chat completion chunks -------------------------------------------------------------

const conversation = [];

function apiKey() {
  return $('api-key').value.trim();
}

function addMessage(role, text) {
  const div = el('div', {class: 'msg ' + role, text});
  $('chat-log').append(div);
  $('chat-log').scrollTop = $('chat-log').scrollHeight;
  return div;
}

async function send(text) {
  conversation.push({role: 'user', content: text});
  addMessage('user', text);
  const out = addMessage('assistant', '');
  const started = performance.now();
  let tokens = 0, firstAt = 0;
  const headers = {'Content-Type': 'application/json', Accept: 'text/event-stream'};
  if (apiKey()) headers.Authorization = 'Bearer ' + apiKey();
  const body = {model: $('model-id').dataset.model, messages: conversation, stream: true,
    max_tokens: Number($('chat-max-tokens').value), temperature: Number($('chat-temperature').value)};
  const response = await fetch('/v1/chat/completions', {method: 'POST', headers, body: JSON.stringify(body)});
  if (!response.ok) {
    const problem = await response.json().catch(() => ({}));
    conversation.pop();
    out.remove();
    throw new Error(response.status + ': ' + ((problem.error && problem.error.message) || problem.detail || response.statusText));
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '', answer = '', finish = null;
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = event.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trim()).join('\n');
      if (!data || data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message || 'the generation failed');
      if (chunk.id && chunk.id.startsWith('chatcmpl-')) $('transcript-task').value = chunk.id.slice('chatcmpl-'.length);
      const choice = (chunk.choices || [])[0];
      if (!choice) continue;
      if (choice.delta && choice.delta.content) {
        if (!firstAt) firstAt = performance.now();
        tokens++;
        answer += choice.delta.content;
        out.textContent = answer;
        $('chat-log').scrollTop = $('chat-log').scrollHeight;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  conversation.push({role: 'assistant', content: answer});
  const seconds = (performance.now() - started) / 1000;
  out.append(el('span', {class: 'stats', text: (finish || 'done') + ' · ' + tokens + ' chunks in ' + seconds.toFixed(2)
    + ' s · first after ' + ((firstAt - started) / 1000).toFixed(2) + ' s'}));
}

function setUpChat() {
  $('api-key').value = localStorage.getItem('butterfly.apiKey') || '';
  $('api-key').addEventListener('change', () => localStorage.setItem('butterfly.apiKey', apiKey()));
  $('chat-form').addEventListener('submit', async e => {
    e.preventDefault();
    const text = $('chat-input').value.trim();
    if (!text) return;
    $('chat-input').value = '';
    $('chat-send').disabled = true;
    try {
      await send(text);
    } catch (err) {
      addMessage('error', err.message);
    } finally {
      $('chat-send').disabled = false;
    }
  });
  $('chat-input').addEventListener('keydown', e => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('chat-form').requestSubmit(); }
  });
  $('chat-clear').addEventListener('click', () => { conversation.length = 0; $('chat-log').replaceChildren(); });
}

// --- transcript: what the stages computed for a task, and the hash chain of its tokens -------------------------

const TRANSCRIPT_ROWS = 20; // the newest links and steps shown

async function showTranscript(taskId) {
  const headers = {Accept: 'application/json'};
  if (apiKey()) headers.Authorization = 'Bearer ' + apiKey();
  const r = await fetch('/api/v1/tasks/' + encodeURIComponent(taskId) + '/transcript', {headers, cache: 'no-store'});
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    $('transcript-summary').replaceChildren(el('dt', {text: 'error'}),
      el('dd', {text: r.status + ': ' + (body.detail || r.statusText)}));
    $('transcript-links').replaceChildren();
    $('transcript-steps').replaceChildren();
    return;
  }
  const links = body.links || [], steps = body.steps || [];
  $('transcript-summary').replaceChildren(
    el('dt', {text: 'digest'}), el('dd', {text: body.digest + ' (' + links.length + ' tokens; equal digests: the same generation)'}),
    el('dt', {text: 'genesis'}), el('dd', {text: body.genesis + ' (the prompt)'}),
    el('dt', {text: 'replica'}), el('dd', {text: body.replica || ''}));
  $('transcript-links').replaceChildren(...links.slice(-TRANSCRIPT_ROWS).map(l => {
    const tr = el('tr');
    tr.append(el('td', {text: String(l.end)}), el('td', {text: String(l.token_id)}), el('td', {text: l.logits_hash}),
      el('td', {text: l.link}));
    return tr;
  }));
  $('transcript-steps').replaceChildren(...steps.slice(-TRANSCRIPT_ROWS).map(st => {
    const tr = el('tr');
    tr.append(el('td', {text: String(st.batch)}), el('td', {text: String(st.position)}), el('td', {text: String(st.tokens)}),
      el('td', {text: st.input_hash}),
      el('td', {text: (st.stages || []).map(g => g.node_id + ' = ' + g.output_hash).join(' → ')}));
    return tr;
  }));
}

function setUpTranscript() {
  $('transcript-form').addEventListener('submit', e => {
    e.preventDefault();
    const id = $('transcript-task').value.trim();
    if (id) showTranscript(id).catch(err => $('transcript-summary').replaceChildren(el('dd', {text: err.message})));
  });
}

setUpChat();
setUpTranscript();
poll();
