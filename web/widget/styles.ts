// The widget's stylesheet, inside its shadow root: the page's CSS does not reach in (`all: initial`
// on the host stops inherited fonts and colours too) and ours does not leak out.
export const STYLES = `
:host{all:initial;position:fixed;z-index:2147483000;bottom:20px;right:20px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;--sb-primary:#2456d6;--sb-on-primary:#fff}
:host([data-position=bottom-left]){right:auto;left:20px}
*{box-sizing:border-box}
button,textarea,input{font:inherit;color:inherit}
button{cursor:pointer}
:focus-visible{outline:3px solid #f0b400;outline-offset:2px}
.launcher{width:56px;height:56px;border-radius:50%;border:0;background:var(--sb-primary);color:var(--sb-on-primary);box-shadow:0 4px 14px rgba(0,0,0,.25);display:flex;align-items:center;justify-content:center}
.launcher svg{width:28px;height:28px;fill:currentColor}
.launcher.with-label{width:auto;border-radius:28px;padding:0 18px 0 14px;gap:8px;font-weight:600}
.launcher[hidden],.window[hidden],[hidden]{display:none!important}
.window{width:min(370px,calc(100vw - 40px));height:min(560px,calc(100vh - 40px));background:#fff;border-radius:14px;box-shadow:0 10px 40px rgba(0,0,0,.28);display:flex;flex-direction:column;overflow:hidden}
.header{background:var(--sb-primary);color:var(--sb-on-primary);padding:12px 14px;display:flex;align-items:center;gap:8px}
.header h2{font-size:15px;font-weight:600;margin:0;flex:1}
.close{background:transparent;border:0;color:inherit;font-size:22px;line-height:1;padding:2px 6px;border-radius:6px}
.log{flex:1;overflow-y:auto;padding:12px;display:flex;flex-direction:column;gap:8px;background:#f6f7f9}
.msg{max-width:85%;padding:8px 11px;border-radius:12px;white-space:pre-wrap;overflow-wrap:anywhere}
.msg.user{align-self:flex-end;background:var(--sb-primary);color:var(--sb-on-primary);border-bottom-right-radius:4px}
.msg.agent{align-self:flex-start;background:#fff;border:1px solid #dde1e6;border-bottom-left-radius:4px}
.msg .who{display:block;font-size:11px;color:#59636e;margin-bottom:2px}
.note{align-self:center;font-size:12px;color:#59636e;text-align:center}
.rich{margin-top:6px;display:flex;flex-direction:column;gap:6px;white-space:normal}
.card{border:1px solid #dde1e6;border-radius:8px;padding:6px 8px}
.card strong{display:block}
.rich img{max-width:100%;border-radius:6px}
.rich a{color:var(--sb-primary)}
.actions{display:flex;flex-wrap:wrap;gap:6px;margin-top:6px}
.actions button{border:1px solid var(--sb-primary);background:#fff;color:var(--sb-primary);border-radius:14px;padding:4px 10px}
.actions button:disabled{opacity:.5;cursor:default}
.thumbs{display:flex;gap:4px;margin-top:4px}
.thumbs button{border:1px solid transparent;background:transparent;border-radius:6px;padding:2px 4px;color:#8c959f;line-height:0}
.thumbs svg{width:14px;height:14px;fill:currentColor}.thumbs .down svg{transform:rotate(180deg)}
.thumbs button:hover,.thumbs button[aria-pressed=true]{color:var(--sb-primary)}
.thumbs button[aria-pressed=true]{border-color:#59636e;background:#eef0f3}
.typing{align-self:flex-start;padding:8px 12px;background:#fff;border:1px solid #dde1e6;border-radius:12px}
.typing span{display:inline-block;width:6px;height:6px;margin:0 2px;border-radius:50%;background:#8c959f;animation:sb-blink 1.2s infinite}
.typing span:nth-child(2){animation-delay:.2s}.typing span:nth-child(3){animation-delay:.4s}
@keyframes sb-blink{0%,80%,100%{opacity:.25}40%{opacity:1}}
@media (prefers-reduced-motion:reduce){.typing span{animation:none}}
.status{font-size:12px;color:#59636e;padding:0 12px}
.error{background:#fff1f0;color:#a4000f;border-top:1px solid #ffccc7;padding:8px 12px;font-size:13px}
.files{display:flex;flex-wrap:wrap;gap:4px;padding:0 10px}
.files span{background:#eef0f3;border-radius:10px;padding:2px 8px;font-size:12px}
.files button{border:0;background:transparent;padding:0 0 0 4px}
form{display:flex;align-items:flex-end;gap:6px;padding:10px;border-top:1px solid #dde1e6;background:#fff}
textarea{flex:1;resize:none;border:1px solid #c5ccd3;border-radius:10px;padding:8px 10px;min-height:38px;max-height:120px;background:#fff}
.send,.attach{border:0;border-radius:10px;height:38px;padding:0 12px}
.send{background:var(--sb-primary);color:var(--sb-on-primary)}
.send:disabled{opacity:.6;cursor:default}
.attach{background:#eef0f3;line-height:0}.attach svg{width:18px;height:18px;fill:#59636e}
.mic{border:0;border-radius:10px;height:38px;padding:0 10px;background:#eef0f3;line-height:0}.mic svg{width:18px;height:18px;fill:#59636e}
.mic.on-call{background:#c62828}.mic.on-call svg{fill:#fff}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
`;
