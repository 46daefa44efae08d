/*
 * Who the visitor is, for the webchat widget. GET /widget.js serves this file and widget.js
 * as one script, this one first (gateway/webchat/widget-route.ts); widget.js works without it
 * (then nobody is identified and no pre-chat form shows).
 *
 * The host page may say who is chatting, before or after the widget's script loads:
 *
 *   <script>
 *     window.MAS = window.MAS || { q: [], identify: function (u) { this.q.push(['identify', u]); } };
 *     MAS.identify({ id: '42', name: 'Ann Lee', email: 'ann@example.com', hash: '<hex HMAC-SHA256 of id>' });
 *   </script>
 *   <script src="https://your-host/widget.js" data-integration-id="7" async></script>
 *
 * `hash` is computed by the page's server: the hex HMAC-SHA256 of `id`, keyed with the
 * integration's webhook secret (the secret never goes into the page). Calls queued in `MAS.q`
 * before the script ran are replayed in order; later calls take effect at once (on the open
 * socket, else in the next `hello`). A hash that does not verify is refused by the server and
 * the chat goes on anonymously. The name and email reach the customer's lead with their next
 * message.
 *
 * Also here: the optional pre-chat form (the integration's `prechatForm`: "name" or
 * "name_email"), shown before the first message of a visitor the page did not identify.
 */
(function () {
  'use strict';

  var mas = (window.MAS = window.MAS || {});
  // A second widget script on the page shares the first one's identity.
  if (mas.__widget) return;
  var queued = Array.isArray(mas.q) ? mas.q : [];
  var listeners = [];

  function text(v, max) {
    return typeof v === 'string' && v.trim() ? v.trim().slice(0, max) : null;
  }

  mas.user = null;
  mas.identify = function (user) {
    var ok = user && typeof user === 'object' && (typeof user.id === 'string' || typeof user.id === 'number') && String(user.id) && typeof user.hash === 'string';
    if (!ok) {
      if (window.console) console.warn('MAS.identify: {id, hash} are required (hash: hex HMAC-SHA256 of id, computed by your server)');
      return;
    }
    mas.user = { id: String(user.id), name: text(user.name, 200), email: text(user.email, 254), hash: user.hash };
    for (var i = 0; i < listeners.length; i++) listeners[i](mas.user);
  };
  function run(call) {
    if (call && call[0] === 'identify') mas.identify(call[1]);
  }
  mas.q = { push: run };
  for (var i = 0; i < queued.length; i++) run(queued[i]);

  /** The pre-chat form: a name (and an email for "name_email"); `done({name, email})` once sent. */
  function prechatForm(kind, done) {
    var f = document.createElement('form');
    f.className = 'prechat';
    var style = document.createElement('style');
    style.textContent =
      '.prechat{display:flex;flex-direction:column;gap:8px;padding:12px;border-top:1px solid #e3e6eb}' +
      '.prechat p{margin:0;color:#444}.prechat label{display:flex;flex-direction:column;gap:3px;font-size:12px;color:#444}' +
      '.prechat input{border:1px solid #c5cad3;border-radius:8px;padding:8px;color:#1c1c1c;background:#fff}' +
      '.prechat button{border:0;border-radius:8px;padding:9px 14px;background:#1f5fd6;color:#fff;font-weight:600;cursor:pointer}';
    f.appendChild(style);
    var intro = document.createElement('p');
    intro.textContent = 'Before we start, tell us who you are.';
    f.appendChild(intro);
    function field(labelText, type, max) {
      var label = document.createElement('label');
      label.textContent = labelText;
      var input = document.createElement('input');
      input.type = type;
      input.required = true;
      input.maxLength = max;
      label.appendChild(input);
      f.appendChild(label);
      return input;
    }
    var name = field('Your name', 'text', 200);
    var email = kind === 'name_email' ? field('Your email', 'email', 254) : null;
    var start = document.createElement('button');
    start.type = 'submit';
    start.textContent = 'Start chat';
    f.appendChild(start);
    f.addEventListener('submit', function (e) {
      e.preventDefault();
      var values = { name: text(name.value, 200), email: email ? text(email.value, 254) : null };
      if (values.name) done(values);
    });
    return f;
  }

  mas.__widget = {
    onIdentify: function (fn) {
      listeners.push(fn);
    },
    prechatForm: prechatForm,
  };
})();
