/**
 * The login page's script: a login link (`/login#token=…`, printed by `picklebot dashboard`
 * and on a terminal by `picklebot server`) carries the token in its fragment, which the
 * browser never sends. The script takes it out of the address bar and the history entry
 * first, then fills in the form and submits it, as the owner would by hand.
 */
export const LOGIN_JS = `
(function () {
  var found = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!found) return;
  history.replaceState(null, "", location.pathname + location.search);
  var form = document.getElementById("login");
  if (!form || !found[1]) return;
  form.elements.token.value = decodeURIComponent(found[1]);
  form.submit();
})();
`;
