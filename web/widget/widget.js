/*
 * The webchat widget. Embed with:
 *   <script src="https://your-host/widget.js" data-integration-id="7" async></script>
 * Optional: data-title="Chat with us".
 *
 * Dependency-free. Talks to GET /api/webchat/<id>/ws on the host that served this script
 * (the URL is derived from the script's own src). The visitor token lives in localStorage,
 * so a reload resumes the same visitor and shows the session's history. Reconnects with
 * exponential backoff and resumes from the last seq seen. Text only: every piece of data
 * is put in the page with textContent, never as HTML.
 *
 * A reply being written shows as it grows: `typing {role:"agent"}` shows "Assistant is
 * typing…", `delta` frames add their text to a bubble of their own, which the reply's
 * `message` (the whole, stored text) replaces. While the visitor writes, a `typing` frame goes
 * out at most every few seconds.
 *
 * The conversation opens with a greeting (`welcome.greeting`, the agent's; the default text
 * until the first welcome, then the last one seen, kept with the visitor): shown, never sent or
 * stored, one bubble above everything else. Every message shows its time (HH:MM on the
 * visitor's clock: `at` of the frame, the send time of the visitor's own), an operator's their
 * `name`. "A colleague will answer you here shortly." shows while the session is paused and
 * the latest reply is not an operator's: it goes once a person replied, also after a reload
 * (the replay's messages come before the session's status).
 *
 * An agent message that offers options (`options`: titles, a clarify reply's "Do you mean: 1.
 * Returns 2. Exchanges?") shows them as numbered buttons under it; a click sends the number as
 * an ordinary message. They are disabled once one is chosen or a newer message came.
 *
 * Who the visitor is: the host page's `MAS.identify({id, name, email, hash})` (before or after
 * this script loads; identity.js, served in front of this file, says how) goes in `hello` or,
 * later, in an `identify` frame. The integration's pre-chat form (`welcome.prechat`) shows
 * before the first message of a visitor nobody identified; its answers go with the messages
 * sent until a session exists (`message.contact`) and are kept with the visitor.
 */
(function () {
  'use strict';

  var script = document.currentScript;
  if (!script) {
    var candidates = document.querySelectorAll('script[data-integration-id][src]');
    script = candidates[candidates.length - 1];
  }
  if (!script || !script.src) return;
  var integrationId = script.getAttribute('data-integration-id') || '';
  if (!/^[1-9][0-9]{0,9}$/.test(integrationId)) {
    if (window.console) console.warn('webchat widget: data-integration-id is missing or invalid');
    return;
  }
  var socketUrl = new URL('api/webchat/' + integrationId + '/ws', script.src);
  socketUrl.protocol = socketUrl.protocol === 'https:' ? 'wss:' : 'ws:';
  var storageKey = 'mas-webchat:' + socketUrl.href;
  var title = script.getAttribute('data-title') || 'Chat with us';

  // ---- persisted visitor --------------------------------------------------------------
  function load() {
    try {
      var v = JSON.parse(window.localStorage.getItem(storageKey) || 'null');
      return v && typeof v === 'object' ? v : {};
    } catch (e) {
      return {};
    }
  }
  function save() {
    try {
      window.localStorage.setItem(storageKey, JSON.stringify({ visitorToken: state.visitorToken, conversationId: state.conversationId, greeting: state.greeting, contact: state.contact }));
    } catch (e) {
      /* private mode: the visitor lasts as long as the page */
    }
  }
  var stored = load();
  var state = {
    visitorToken: typeof stored.visitorToken === 'string' ? stored.visitorToken : null,
    conversationId: typeof stored.conversationId === 'number' ? stored.conversationId : null,
    greeting: typeof stored.greeting === 'string' && stored.greeting ? stored.greeting : null,
    // The pre-chat form's answers {name, email}; the form shown meanwhile (prechatEl).
    contact: stored.contact && typeof stored.contact === 'object' ? stored.contact : null,
    prechatEl: null,
    // Highest seq of a `message` frame shown (a page load starts at 0: the whole session is replayed).
    lastSeq: 0,
    seen: {},
    // Messages of an earlier session are shown: the next session gets a "New conversation" line.
    dividerDue: false,
    pending: [], // [{clientMessageId, text, el}] waiting for their ack
    // The session's status as its frames said (null until one came on this socket: the server sends it when not active).
    sessionStatus: null,
    // The latest agent / operator message of the session (highest seq): an operator's ends the waiting notice.
    lastReplySeq: 0,
    lastReplyRole: null,
    ws: null,
    welcomed: false,
    attempts: 0,
    timer: null,
    open: false,
    started: false,
    // The bubble of a reply being written (delta frames): {el, text}; replaced by the reply's message.
    draft: null,
    // The buttons of the latest message that offered options, while they may be chosen: {seq, buttons}.
    choices: null,
    typingTimer: null,
    typingSentAt: 0,
  };

  // ---- DOM ------------------------------------------------------------------------------
  var host = document.createElement('div');
  host.setAttribute('data-mas-webchat', integrationId);
  var root = host.attachShadow ? host.attachShadow({ mode: 'open' }) : host;
  var style = document.createElement('style');
  style.textContent = [
    ':host{all:initial}',
    '*{box-sizing:border-box;font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;font-size:14px}',
    '.launcher{position:fixed;right:20px;bottom:20px;z-index:2147483646;border:0;border-radius:28px;padding:14px 20px;background:#1f5fd6;color:#fff;font-weight:600;cursor:pointer;box-shadow:0 4px 14px rgba(0,0,0,.25)}',
    '.launcher:focus-visible,.send:focus-visible,.close:focus-visible{outline:3px solid #f5b301;outline-offset:2px}',
    '.panel{position:fixed;right:20px;bottom:84px;z-index:2147483647;width:340px;max-width:calc(100vw - 40px);height:460px;max-height:calc(100vh - 110px);display:flex;flex-direction:column;background:#fff;color:#1c1c1c;border-radius:12px;box-shadow:0 8px 30px rgba(0,0,0,.25);overflow:hidden}',
    '.panel[hidden]{display:none}',
    '.head{display:flex;align-items:center;justify-content:space-between;padding:12px 14px;background:#1f5fd6;color:#fff}',
    '.head h2{margin:0;font-size:15px;font-weight:600}',
    '.close{border:0;background:transparent;color:#fff;font-size:20px;line-height:1;cursor:pointer;padding:2px 6px}',
    '.status{padding:6px 14px;font-size:12px;color:#555;background:#f3f5f9}',
    '.status:empty{display:none}',
    '.log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;margin:0;list-style:none}',
    '.msg{max-width:80%;padding:8px 11px;border-radius:12px;white-space:pre-wrap;word-wrap:break-word;line-height:1.35}',
    '.msg.customer{align-self:flex-end;background:#1f5fd6;color:#fff;border-bottom-right-radius:4px}',
    '.msg.agent,.msg.operator{align-self:flex-start;background:#eef0f4;color:#1c1c1c;border-bottom-left-radius:4px}',
    '.msg .meta{display:flex;gap:8px;justify-content:space-between;align-items:baseline;font-size:11px;opacity:.75;margin-bottom:2px}',
    '.msg .who{font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}',
    '.msg .at{font-size:11px;flex:none}',
    '.msg.sending{opacity:.6}',
    '.msg.failed{outline:2px solid #c62828}',
    '.choices{display:flex;flex-direction:column;gap:4px;margin-top:6px;white-space:normal}',
    '.choice{border:1px solid #1f5fd6;border-radius:8px;padding:5px 10px;background:#fff;color:#1f5fd6;text-align:left;cursor:pointer}',
    '.choice:disabled{cursor:default;opacity:.55}',
    '.choice.chosen{background:#1f5fd6;color:#fff;opacity:1}',
    '.choice:focus-visible{outline:3px solid #f5b301;outline-offset:1px}',
    '.divider{align-self:center;font-size:11px;color:#777}',
    '.typing{padding:0 14px 6px;font-size:12px;color:#555;font-style:italic}',
    '.typing[hidden]{display:none}',
    '.form{display:flex;gap:8px;padding:10px;border-top:1px solid #e3e6eb}',
    '.input{flex:1;resize:none;border:1px solid #c5cad3;border-radius:8px;padding:8px;min-height:38px;max-height:96px;color:#1c1c1c;background:#fff}',
    '.send{border:0;border-radius:8px;padding:0 14px;background:#1f5fd6;color:#fff;font-weight:600;cursor:pointer}',
    '.sr{position:absolute;width:1px;height:1px;margin:-1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}',
  ].join('\n');
  root.appendChild(style);

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  var panelId = 'mas-webchat-panel-' + integrationId;
  var launcher = el('button', 'launcher', 'Chat');
  launcher.type = 'button';
  launcher.setAttribute('aria-label', 'Open chat');
  launcher.setAttribute('aria-expanded', 'false');
  launcher.setAttribute('aria-controls', panelId);

  var panel = el('section', 'panel');
  panel.id = panelId;
  panel.hidden = true;
  panel.setAttribute('role', 'dialog');
  panel.setAttribute('aria-label', title);
  var head = el('div', 'head');
  var heading = el('h2', '', title);
  var closeButton = el('button', 'close', '\u00d7');
  closeButton.type = 'button';
  closeButton.setAttribute('aria-label', 'Close chat');
  head.appendChild(heading);
  head.appendChild(closeButton);
  var statusLine = el('div', 'status');
  statusLine.setAttribute('role', 'status');
  statusLine.setAttribute('aria-live', 'polite');
  var log = el('ol', 'log');
  log.setAttribute('role', 'log');
  log.setAttribute('aria-live', 'polite');
  log.setAttribute('aria-label', 'Conversation');
  var typingLine = el('div', 'typing', 'Assistant is typing\u2026');
  typingLine.hidden = true;
  var form = el('form', 'form');
  var inputId = 'mas-webchat-input-' + integrationId;
  var label = el('label', 'sr', 'Message');
  label.htmlFor = inputId;
  var input = el('textarea', 'input');
  input.id = inputId;
  input.rows = 1;
  input.maxLength = 4096;
  input.placeholder = 'Write a message\u2026';
  var sendButton = el('button', 'send', 'Send');
  sendButton.type = 'submit';
  form.appendChild(label);
  form.appendChild(input);
  form.appendChild(sendButton);
  panel.appendChild(head);
  panel.appendChild(statusLine);
  panel.appendChild(log);
  panel.appendChild(typingLine);
  panel.appendChild(form);
  root.appendChild(launcher);
  root.appendChild(panel);

  function mount() {
    (document.body || document.documentElement).appendChild(host);
  }
  if (document.body) mount();
  else document.addEventListener('DOMContentLoaded', mount);

  // The agent's typing indicator goes away by itself if no text follows (a lost frame, a slow model).
  var TYPING_SHOWN_MS = 15000;
  // The visitor's typing frames: at most one every 3 s.
  var TYPING_EVERY_MS = 3000;
  // A message refused for its rate goes again after 3-6 s (a visitor's rate refills a message every 3 s by default).
  var RATE_LIMITED_RETRY_MS = 3000;
  var ROLE_NAMES = { customer: 'You', agent: 'Assistant', operator: 'Support' };
  // Until the server says the agent's (the server's default is the same text).
  var DEFAULT_GREETING = 'Hi! How can we help you today?';
  var STATUS_TEXT = {
    active: '',
    paused: 'A colleague will answer you here shortly.',
    closed: 'This conversation was closed. Write to start a new one.',
  };

  function setStatus(text) {
    statusLine.textContent = text;
  }

  function pad(n) {
    return (n < 10 ? '0' : '') + n;
  }

  /** HH:MM on the visitor's clock, the whole date and time on hover. */
  function timeOf(date) {
    var t = el('time', 'at', pad(date.getHours()) + ':' + pad(date.getMinutes()));
    t.dateTime = date.toISOString();
    t.title = date.toLocaleString();
    return t;
  }

  /** A message: who wrote it and when (`at`: a Date, or null for no time), then its text (the last child, a text node). */
  function bubble(role, text, at, name) {
    var known = ROLE_NAMES[role] ? role : 'agent';
    var li = el('li', 'msg ' + known);
    var meta = el('span', 'meta');
    meta.appendChild(el('span', 'who', (known === 'operator' && typeof name === 'string' && name) || ROLE_NAMES[known]));
    if (at && !isNaN(at.getTime())) meta.appendChild(timeOf(at));
    li.appendChild(meta);
    li.appendChild(document.createTextNode(text));
    return li;
  }

  // The greeting: the conversation's first bubble, made once (a reconnect or a new session keeps it).
  var greeting = bubble('agent', state.greeting || DEFAULT_GREETING, null);
  greeting.classList.add('greeting');
  log.appendChild(greeting);

  function setGreeting(text) {
    if (typeof text !== 'string' || !text || text === state.greeting) return;
    state.greeting = text;
    greeting.lastChild.data = text;
  }

  /** The line under the header for the session's status: the waiting notice only until a person replied. */
  function sessionNotice() {
    if (state.sessionStatus === 'paused' && state.lastReplyRole === 'operator') return '';
    return STATUS_TEXT[state.sessionStatus] || '';
  }

  function forgetReplies() {
    state.lastReplySeq = 0;
    state.lastReplyRole = null;
  }

  function scrollDown() {
    log.scrollTop = log.scrollHeight;
  }

  /** Places a stored message by seq (after the greeting, before unsent ones and any later seq). */
  function insert(li, seq) {
    li.setAttribute('data-seq', String(seq));
    var children = log.children;
    for (var i = 0; i < children.length; i++) {
      var c = children[i];
      var s = c.getAttribute('data-seq');
      if (c.classList.contains('sending') || (s !== null && Number(s) > seq)) {
        log.insertBefore(li, c);
        return;
      }
    }
    log.appendChild(li);
  }

  /** The options a message offers may no longer be chosen (one was, or a newer message came: `seq`, or the visitor wrote). */
  function retireChoices(seq) {
    if (!state.choices || (typeof seq === 'number' && seq <= state.choices.seq)) return;
    for (var i = 0; i < state.choices.buttons.length; i++) state.choices.buttons[i].disabled = true;
    state.choices = null;
  }

  /** Numbered buttons under an agent message for its options (titles, or {title}); a click sends the number. */
  function addChoices(li, seq, options, newest) {
    var group = el('div', 'choices');
    group.setAttribute('role', 'group');
    group.setAttribute('aria-label', 'Options');
    var buttons = [];
    for (var i = 0; i < options.length; i++) {
      var title = typeof options[i] === 'string' ? options[i] : options[i] && typeof options[i].title === 'string' ? options[i].title : '';
      var b = el('button', 'choice', i + 1 + '. ' + title);
      b.type = 'button';
      b.setAttribute('data-choice', String(i + 1));
      b.disabled = !newest;
      buttons.push(b);
      group.appendChild(b);
    }
    group.addEventListener('click', function (e) {
      var b = e.target.closest && e.target.closest('button.choice');
      if (!b || b.disabled) return;
      b.classList.add('chosen');
      sendText(b.getAttribute('data-choice'));
      input.focus();
    });
    li.appendChild(group);
    if (newest) {
      retireChoices();
      state.choices = { seq: seq, buttons: buttons };
    }
  }

  function showTyping() {
    typingLine.hidden = false;
    clearTimeout(state.typingTimer);
    state.typingTimer = setTimeout(hideTyping, TYPING_SHOWN_MS);
  }

  function hideTyping() {
    typingLine.hidden = true;
    clearTimeout(state.typingTimer);
  }

  /** Adds a piece of the reply being written to its bubble (after the stored messages, before unsent ones). */
  function growDraft(text) {
    if (!state.draft) {
      var li = bubble('agent', '', new Date());
      li.classList.add('streaming');
      li.setAttribute('aria-busy', 'true');
      log.insertBefore(li, log.querySelector('.sending'));
      state.draft = { el: li, text: li.lastChild };
    }
    state.draft.text.appendData(text);
    hideTyping();
    scrollDown();
  }

  /** The reply being written is over (its message came, a human took over, the socket changed). */
  function dropDraft() {
    if (state.draft && state.draft.el.parentNode) state.draft.el.parentNode.removeChild(state.draft.el);
    state.draft = null;
  }

  function clearHistory() {
    state.choices = null;
    state.seen = {};
    state.lastSeq = 0;
    state.dividerDue = false;
    forgetReplies();
    while (log.lastChild !== greeting) log.removeChild(log.lastChild);
    for (var i = 0; i < state.pending.length; i++) log.appendChild(state.pending[i].el);
  }

  /**
   * The visitor's session is another one (or none: the last one was closed). Its seqs start
   * again at 1, so what is shown belongs to the past: it stays, but no longer takes part in
   * ordering by seq. A "New conversation" line goes in once the next session exists.
   */
  function changeSession(conversationId) {
    retireChoices();
    state.seen = {};
    state.lastSeq = 0;
    forgetReplies();
    var shown = log.querySelectorAll('[data-seq]');
    for (var i = 0; i < shown.length; i++) shown[i].removeAttribute('data-seq');
    if (shown.length > 0) state.dividerDue = true;
    if (conversationId !== null && state.dividerDue) {
      state.dividerDue = false;
      log.appendChild(el('li', 'divider', 'New conversation'));
      // Messages waiting for their ack belong to the new session: below the line.
      for (var j = 0; j < state.pending.length; j++) log.appendChild(state.pending[j].el);
    }
  }

  function sendPending(item) {
    send({ type: 'message', clientMessageId: item.clientMessageId, text: item.text, contact: item.contact || undefined });
  }

  // ---- who the visitor is (identity.js) ----------------------------------------------
  var who = (window.MAS && window.MAS.__widget) || { onIdentify: function () {}, prechatForm: null };
  function identified() {
    return window.MAS && window.MAS.user;
  }
  function showPrechat(kind, conversationId) {
    var wanted = (kind === 'name' || kind === 'name_email') && who.prechatForm && !identified() && !state.contact && conversationId === null && state.lastSeq === 0;
    if (!wanted || state.prechatEl) return;
    state.prechatEl = who.prechatForm(kind, function (values) {
      state.contact = values;
      save();
      hidePrechat();
      input.focus();
    });
    panel.insertBefore(state.prechatEl, form);
    form.style.display = 'none';
  }
  function hidePrechat() {
    if (state.prechatEl && state.prechatEl.parentNode) state.prechatEl.parentNode.removeChild(state.prechatEl);
    state.prechatEl = null;
    form.style.display = '';
  }
  who.onIdentify(function (user) {
    hidePrechat();
    // An open socket has sent its hello already (a closed one sends the identity in its next hello).
    send({ type: 'identify', id: user.id, name: user.name, email: user.email, hash: user.hash });
  });

  /** Sends a message again after a while, if it still waits for its ack (it was not stored). */
  function resendLater(clientMessageId, ms) {
    setTimeout(function () {
      for (var m = 0; m < state.pending.length; m++) {
        if (state.pending[m].clientMessageId === clientMessageId) sendPending(state.pending[m]);
      }
    }, ms);
  }

  // ---- the socket ---------------------------------------------------------------------
  function send(frame) {
    if (state.ws && state.ws.readyState === 1) {
      state.ws.send(JSON.stringify(frame));
      return true;
    }
    return false;
  }

  function connect() {
    if (state.ws) return;
    state.started = true;
    clearTimeout(state.timer);
    var ws;
    try {
      ws = new WebSocket(socketUrl.href);
    } catch (e) {
      return retry();
    }
    state.ws = ws;
    state.welcomed = false;
    ws.onopen = function () {
      var hello = { type: 'hello', lastSeq: state.lastSeq };
      if (state.visitorToken) hello.visitorToken = state.visitorToken;
      if (state.conversationId) hello.conversationId = state.conversationId;
      if (identified()) hello.identity = window.MAS.user;
      ws.send(JSON.stringify(hello));
    };
    ws.onmessage = function (event) {
      var frame;
      try {
        frame = JSON.parse(event.data);
      } catch (e) {
        return;
      }
      if (frame && typeof frame.type === 'string') onFrame(frame);
    };
    ws.onclose = function () {
      if (state.ws !== ws) return;
      state.ws = null;
      state.welcomed = false;
      retry();
    };
    ws.onerror = function () {
      /* onclose follows */
    };
  }

  function retry() {
    state.attempts++;
    // 0.5 s, 1 s, 2 s, ... capped at 30 s, with jitter so a restarted server is not stampeded.
    var delay = Math.min(30000, 500 * Math.pow(2, Math.min(state.attempts - 1, 6)));
    delay = delay / 2 + Math.random() * (delay / 2);
    setStatus(state.attempts > 1 ? 'Reconnecting\u2026' : 'Connecting\u2026');
    clearTimeout(state.timer);
    state.timer = setTimeout(connect, delay);
  }

  function onFrame(f) {
    switch (f.type) {
      case 'welcome': {
        // conversationId is null while the visitor has no open session (the first message
        // opens one, announced by a second welcome on the same socket).
        var conversationId = typeof f.conversationId === 'number' ? f.conversationId : null;
        var firstOnSocket = !state.welcomed;
        // A new socket does not carry on a reply being written: its message comes whole.
        if (firstOnSocket || conversationId !== state.conversationId) {
          dropDraft();
          hideTyping();
        }
        if (conversationId !== state.conversationId) changeSession(conversationId);
        state.visitorToken = f.visitorToken;
        state.conversationId = conversationId;
        state.welcomed = true;
        state.attempts = 0;
        // A status frame follows when the session is not active.
        state.sessionStatus = null;
        setGreeting(f.greeting);
        showPrechat(f.prechat, conversationId);
        save();
        setStatus(conversationId === null && state.dividerDue ? STATUS_TEXT.closed : '');
        // Unacknowledged messages go again with the same clientMessageId (never stored twice),
        // once per socket: a later welcome (a new session) does not mean they were lost.
        if (firstOnSocket) for (var i = 0; i < state.pending.length; i++) sendPending(state.pending[i]);
        break;
      }
      case 'message':
        if (typeof f.seq !== 'number' || state.seen[f.seq]) return;
        state.seen[f.seq] = true;
        if (f.role !== 'customer') {
          dropDraft();
          hideTyping();
          if (f.seq > state.lastReplySeq) {
            state.lastReplySeq = f.seq;
            state.lastReplyRole = f.role;
            // A person replied (or the agent's handoff notice came): the waiting notice follows.
            if (state.sessionStatus === 'paused' && (statusLine.textContent === '' || statusLine.textContent === STATUS_TEXT.paused)) setStatus(sessionNotice());
          }
        }
        var newest = f.seq > state.lastSeq;
        if (newest) state.lastSeq = f.seq;
        retireChoices(f.seq);
        var li = bubble(f.role, String(f.text), new Date(f.at), f.name);
        if (f.role === 'agent' && Array.isArray(f.options) && f.options.length) addChoices(li, f.seq, f.options, newest);
        insert(li, f.seq);
        scrollDown();
        break;
      case 'ack':
        for (var j = 0; j < state.pending.length; j++) {
          var p = state.pending[j];
          if (p.clientMessageId !== f.clientMessageId) continue;
          state.pending.splice(j, 1);
          if (typeof f.seq === 'number') retireChoices(f.seq);
          p.el.classList.remove('sending', 'failed');
          p.el.removeAttribute('title');
          if (p.rateLimited && !state.pending.some(function (q) { return q.rateLimited; })) setStatus(sessionNotice());
          if (typeof f.conversationId === 'number' && f.conversationId !== state.conversationId) {
            // Stored earlier, in a past session (a resend): it stays where it is.
          } else if (state.seen[f.seq]) {
            // Already shown (replayed before the ack came): keep one copy.
            if (p.el.parentNode) p.el.parentNode.removeChild(p.el);
          } else {
            state.seen[f.seq] = true;
            if (p.el.parentNode) p.el.parentNode.removeChild(p.el);
            insert(p.el, f.seq);
          }
          break;
        }
        break;
      case 'status':
        state.sessionStatus = f.status;
        setStatus(sessionNotice());
        dropDraft();
        hideTyping();
        break;
      case 'typing':
        if (f.role === 'agent') showTyping();
        break;
      case 'delta':
        if (f.conversationId === state.conversationId && typeof f.text === 'string') growDraft(f.text);
        break;
      case 'error':
        if (f.code === 'INVALID_TOKEN') {
          // The stored visitor is not valid here: a new visitor follows (welcome).
          state.visitorToken = null;
          state.conversationId = null;
          clearHistory();
        } else if (f.clientMessageId && f.code === 'VALIDATION_ERROR') {
          for (var k = 0; k < state.pending.length; k++) {
            if (state.pending[k].clientMessageId === f.clientMessageId) {
              state.pending[k].el.classList.remove('sending');
              state.pending[k].el.classList.add('failed');
              state.pending[k].el.setAttribute('title', 'Not sent');
              state.pending.splice(k, 1);
              break;
            }
          }
        } else if (f.clientMessageId && f.code === 'QUEUE_UNAVAILABLE') {
          resendLater(f.clientMessageId, 2000);
        } else if (f.clientMessageId && f.code === 'RATE_LIMITED') {
          // Not stored: it stays in the list, waiting, and goes again when the rate allows.
          for (var r = 0; r < state.pending.length; r++) {
            if (state.pending[r].clientMessageId !== f.clientMessageId) continue;
            state.pending[r].rateLimited = true;
            state.pending[r].el.setAttribute('title', 'Waiting: too many messages in a short time');
          }
          setStatus('You are writing faster than we can take; your message will be sent in a moment.');
          resendLater(f.clientMessageId, RATE_LIMITED_RETRY_MS + Math.random() * RATE_LIMITED_RETRY_MS);
        }
        break;
      default:
        break;
    }
  }

  function newId() {
    if (window.crypto && typeof window.crypto.randomUUID === 'function') return window.crypto.randomUUID();
    var a = new Uint32Array(4);
    window.crypto.getRandomValues(a);
    return Array.prototype.map.call(a, function (n) { return n.toString(16); }).join('-');
  }

  // ---- interaction --------------------------------------------------------------------
  function setOpen(open) {
    state.open = open;
    panel.hidden = !open;
    launcher.setAttribute('aria-expanded', open ? 'true' : 'false');
    launcher.setAttribute('aria-label', open ? 'Hide chat' : 'Open chat');
    if (open) {
      if (!state.started) connect();
      input.focus();
      scrollDown();
    } else launcher.focus();
  }

  launcher.addEventListener('click', function () {
    setOpen(!state.open);
  });
  closeButton.addEventListener('click', function () {
    setOpen(false);
  });
  panel.addEventListener('keydown', function (e) {
    if (e.key === 'Escape') setOpen(false);
  });
  input.addEventListener('keydown', function (e) {
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit ? form.requestSubmit() : form.dispatchEvent(new Event('submit', { cancelable: true }));
    }
  });
  input.addEventListener('input', function () {
    var now = Date.now();
    if (!state.welcomed || !input.value.trim() || now - state.typingSentAt < TYPING_EVERY_MS) return;
    state.typingSentAt = now;
    send({ type: 'typing', role: 'customer' });
  });
  /** The visitor's message: shown at once, sent now or after the welcome. */
  function sendText(text) {
    retireChoices();
    // The pre-chat answers go with the messages that open the session (the lead is made with the session).
    var item = { clientMessageId: newId(), text: text, el: bubble('customer', text, new Date()), contact: state.conversationId === null ? state.contact : null };
    item.el.classList.add('sending');
    state.pending.push(item);
    log.appendChild(item.el);
    scrollDown();
    if (state.welcomed) sendPending(item);
    else connect(); // sent after welcome
  }

  form.addEventListener('submit', function (e) {
    e.preventDefault();
    var text = input.value.trim();
    if (!text) return;
    input.value = '';
    sendText(text);
  });

  window.addEventListener('online', function () {
    if (!state.ws && state.started) {
      state.attempts = 0;
      connect();
    }
  });

  // A returning visitor: connect now, so history and replies are there when the panel opens.
  if (state.visitorToken) connect();
})();
