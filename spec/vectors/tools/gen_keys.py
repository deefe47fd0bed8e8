import json, os, tempfile, sys
os.environ["HERMES_HOME"] = tempfile.mkdtemp()
os.environ["HERMES_BACKGROUND_NOTIFICATIONS"] = "result"
from gateway.config import Platform
from gateway.session import SessionSource, build_session_key
V = []
def O(platform, ct, chat, thread=None, user=None, name=None):
    o = {"platform": platform, "chat_type": ct, "chat_id": chat}
    if thread is not None: o["thread_id"] = thread
    if user is not None: o["user_id"] = user
    if name is not None: o["user_name"] = name
    return o
def P(g=True, t=False, profile=None):
    p = {"group_sessions_per_user": g, "thread_sessions_per_user": t}
    if profile: p["profile"] = profile
    return p
def hermes(o, p):
    s = SessionSource(platform=Platform(o["platform"]), chat_id=o["chat_id"], chat_type=o["chat_type"],
        thread_id=o.get("thread_id"), user_id=o.get("user_id"), user_name=o.get("user_name"))
    try:
        return build_session_key(s, p["group_sessions_per_user"], p["thread_sessions_per_user"], p.get("profile"))
    except ValueError:
        return None
def hb(id, rules, o, p=None, note=None):
    p = p or P()
    k = hermes(o, p)
    v = {"id": "hermes-build/" + id, "rules": rules, "op": "hermes_build", "origin": o, "policy": p}
    v["expect"] = {"key": k} if k is not None else {"error": {"kind": "whatsapp_id_rejected"}}
    if note: v["note"] = note
    V.append(v)
def cb(id, rules, o, key, p=None, note=None):
    v = {"id": "canonical-build/" + id, "rules": rules, "op": "canonical_build", "origin": o, "policy": p or P(), "expect": {"key": key}}
    if note: v["note"] = note
    V.append(v)
def F(ns, plat, ct, chat, thread=None, user=None):
    f = {"namespace": ns, "platform": plat, "chat_type": ct, "chat_id": chat}
    if thread is not None: f["thread_id"] = thread
    if user is not None: f["user_id"] = user
    return f
def cp(id, rules, key, fields=None, error=None, note=None):
    v = {"id": "canonical-parse/" + id, "rules": rules, "op": "canonical_parse", "key": key,
         "expect": {"fields": fields} if fields else {"error": error}}
    if note: v["note"] = note
    V.append(v)
K = lambda v: {"state": "known", "value": v}
A = {"state": "absent"}
U = lambda why: {"state": "unknown", "value": why}
def hp(id, rules, key, parsed=None, error=None, note=None):
    v = {"id": "hermes-parse/" + id, "rules": rules, "op": "hermes_parse", "key": key,
         "expect": {"parsed": parsed} if parsed else {"error": error}}
    if note: v["note"] = note
    V.append(v)
def HP(ns, plat, ct, chat, thread, user):
    return {"namespace": ns, "platform": plat, "chat_type": ct, "chat_id": chat, "thread_id": thread, "user_id": user}
def og(id, rules, o, error=None):
    V.append({"id": "origin/" + id, "rules": rules, "op": "origin", "origin": o,
              "expect": {"error": error} if error else {"ok": True}})
E = lambda kind, position=None, part=None, field=None: {k: v for k, v in
    dict(kind=kind, position=position, part=part, field=field).items() if v is not None}

H = ["KEY-H1"]
# ---- hermes build: every grammar branch, every id shape
hb("dm/telegram", H, O("telegram", "dm", "123456789"))
hb("dm/telegram-topic", H, O("telegram", "dm", "123456789", thread="7"))
hb("dm/user-not-keyed", H+["KEY-4"], O("telegram", "dm", "123456789", user="123456789"))
hb("dm/profile", H+["KEY-2"], O("telegram", "dm", "123456789"), P(profile="coder"))
hb("dm/profile-default", H+["KEY-2"], O("telegram", "dm", "1"), P(profile="default"))
hb("dm/matrix-room", H, O("matrix", "dm", "!abc:matrix.org", user="@alice:matrix.org"))
hb("dm/signal-e164", H, O("signal", "dm", "+15551234567"))
hb("dm/signal-uuid", H, O("signal", "dm", "2f1c0a3e-7d7b-4a8e-9a53-0f0e2b8a1c11"))
hb("dm/slack", H, O("slack", "dm", "D0456", thread="1700000000.123456"))
hb("group/telegram-per-user", H+["KEY-4"], O("telegram", "group", "-1001234567890", user="42"))
hb("group/telegram-shared", H+["KEY-3", "KEY-4"], O("telegram", "group", "-1001234567890", user="42"), P(g=False))
hb("group/telegram-topic-shared", H+["KEY-4"], O("telegram", "group", "-1001234567890", thread="5", user="42"))
hb("group/telegram-topic-per-user", H+["KEY-3", "KEY-4"], O("telegram", "group", "-1001234567890", thread="5", user="42"), P(t=True))
hb("group/telegram-topic-thread-knob-only", H+["KEY-4"], O("telegram", "group", "-1001234567890", thread="5", user="42"), P(g=False, t=True))
hb("group/topic-equals-user", H+["KEY-4"], O("telegram", "group", "-100", thread="42", user="42"), P(t=True))
hb("group/no-user", H, O("telegram", "group", "-100"))
hb("group/general-topic", H, O("telegram", "group", "-100", thread="1"))
hb("group/slack-thread", H, O("slack", "group", "C0123", thread="1700000000.123456"))
hb("group/slack-ts-trailing-zeros", H+["ORIGIN-5"], O("slack", "group", "C0123", thread="1700000000.000100"))
hb("group/matrix-colons", H, O("matrix", "group", "!abc:matrix.org", user="@alice:matrix.org"))
hb("group/matrix-port", H, O("matrix", "group", "!a:srv:8448", thread="$event:matrix.org"))
hb("group/matrix-ipv6", H, O("matrix", "group", "!room:[::1]", user="@bob:[::1]"))
hb("group/matrix-v3-event", H, O("matrix", "group", "!abc:matrix.org", thread="$Ab+c/d="))
hb("group/matrix-v4-event", H, O("matrix", "group", "!abc:matrix.org", thread="$Ab-c_d"))
hb("group/discord-snowflake", H+["ORIGIN-5"], O("discord", "group", "1476968053597274124", user="1476968053597274125"))
hb("thread/discord", H, O("discord", "thread", "222", thread="222", user="333"))
hb("thread/discord-per-user", H, O("discord", "thread", "222", thread="222", user="333"), P(t=True))
hb("channel/slack", H, O("slack", "channel", "C0123ABC", user="U77ABC"))
hb("channel/google-chat", H, O("google_chat" if False else "mattermost", "channel", "spaces/AAAAb1c", thread="spaces/X/threads/Y", user="users/123"), P(t=True))
hb("group/feishu", H, O("feishu", "group", "oc_84a3f", thread="omt_19d2", user="ou_7c1e"), P(t=True))
hb("group/teams-like", H, O("mattermost", "group", "19:abc@thread.v2", user="29:xyz"))
hb("group/signal-b64", H, O("signal", "group", "group:QUJD+/x=", user="+15551234567"))
hb("group/whitespace-ids", H+["ORIGIN-5"], O("telegram", "group", " -100 ", thread="\t7\n"))
hb("group/unicode-case", H+["KEY-5", "ORIGIN-5"], O("matrix", "group", "!İstanbul:Example.ORG", user="@Straße:ex"))
hb("group/percent-and-tilde", H, O("slack", "group", "C%3A~x", user="U%25"))
hb("group/leading-zeros", H+["ORIGIN-5"], O("telegram", "group", "007", user="+0"))
hb("group/profile", H+["KEY-2"], O("telegram", "group", "-100", user="42"), P(profile="coder"))
# WhatsApp canonicalisation (KEY-H2)
W = H + ["KEY-H2"]
hb("whatsapp/dm-jid", W, O("whatsapp", "dm", "60123456789@s.whatsapp.net"))
hb("whatsapp/dm-device-jid", W, O("whatsapp", "dm", "60123456789:47@s.whatsapp.net"))
hb("whatsapp/dm-lid", W, O("whatsapp", "dm", "999999999999999@lid", thread="t1"))
hb("whatsapp/dm-plus", W, O("whatsapp", "dm", "+60123456789"))
hb("whatsapp/dm-double-plus", W, O("whatsapp", "dm", "++6012"), note="hermes normalises twice: both + go")
hb("whatsapp/dm-empty-falls-to-user", W, O("whatsapp", "dm", "@s.whatsapp.net", user="6012:3@s.whatsapp.net"))
hb("whatsapp/dm-empty-falls-to-raw-user", W, O("whatsapp", "dm", "@x", user="@y"))
hb("whatsapp/dm-empty-falls-to-thread", W, O("whatsapp", "dm", ":47@x", thread="t9"))
hb("whatsapp/dm-empty-bare", W, O("whatsapp", "dm", "+"))
hb("whatsapp/dm-rejected-space", W, O("whatsapp", "dm", "a b@s.whatsapp.net"))
hb("whatsapp/dm-rejected-single-plus-left", W, O("whatsapp", "dm", "++"), note="empty only after the second pass: hermes raises")
hb("whatsapp/dm-trailing-newline-accepted", W, O("whatsapp", "dm", "12\n:3"), note="Python's $ matches before a final newline")
hb("whatsapp/dm-info-separator-stripped", W, O("whatsapp", "dm", "\u001c6012"))
hb("whatsapp/group-raw-chat", W, O("whatsapp", "group", "120363000000@g.us", user="60123456789:47@s.whatsapp.net"))
hb("whatsapp/group-hyphen-chat", W, O("whatsapp", "group", "a-b@g.us", user="60123456789@s.whatsapp.net"))
hb("whatsapp/group-user-rejected-even-unkeyed", W, O("whatsapp", "group", "120363000000@g.us", user="x y"), P(g=False))
hb("whatsapp/group-user-empty-canonical", W, O("whatsapp", "group", "120363000000@g.us", user="@lid"))
hb("whatsapp/cloud-not-canonicalised", H, O("whatsapp_cloud", "dm", "60123456789@s.whatsapp.net"))
# Round 3 of the clean room (spec/cleanroom/ROUNDS.md) read these three
# corners of KEY-H2 both ways and passed; hermes decides them:
hb("whatsapp/dm-plus-not-leading", W, O("whatsapp", "dm", "601+23@s.whatsapp.net"), note="the first + anywhere goes, not only a leading one")
hb("whatsapp/dm-empty-falls-to-user-then-thread", W, O("whatsapp", "dm", "@s.whatsapp.net", thread="t1", user="6012@s.whatsapp.net"), note="after the fallback to the user id, the thread is still appended")
hb("whatsapp/dm-bad-user-unused", W, O("whatsapp", "dm", "60123456789@s.whatsapp.net", user="x y"), note="a dm's user id is normalised only when the dm falls back to it, so a user id hermes would reject does not fail the build")

# ---- canonical build (expected keys written by hand from KEY-C1/KEY-C2)
C = ["KEY-C1"]
cb("dm/telegram", C, O("telegram", "dm", "123456789"), "agent:main:telegram:dm:123456789")
cb("dm/topic", C, O("telegram", "dm", "123456789", thread="7", user="9"), "agent:main:telegram:dm:123456789:7")
cb("group/per-user-marked", C+["KEY-C7"], O("telegram", "group", "-1001234567890", user="42"), "agent:main:telegram:group:-1001234567890:~42")
cb("group/topic-shared", C, O("telegram", "group", "-1001234567890", thread="5", user="42"), "agent:main:telegram:group:-1001234567890:5")
cb("group/topic-per-user", C, O("telegram", "group", "-100", thread="5", user="42"), "agent:main:telegram:group:-100:5:~42", P(t=True))
cb("group/shared", C+["KEY-4"], O("telegram", "group", "-100", user="42"), "agent:main:telegram:group:-100", P(g=False))
cb("thread/discord", C, O("discord", "thread", "222", thread="222"), "agent:main:discord:thread:222:222")
cb("group/slack", C, O("slack", "group", "C0123", thread="1700000000.123456"), "agent:main:slack:group:C0123:1700000000.123456")
cb("escape/matrix", C+["KEY-C2"], O("matrix", "group", "!abc:matrix.org", user="@alice:matrix.org"), "agent:main:matrix:group:!abc%3Amatrix.org:~@alice%3Amatrix.org")
cb("escape/ipv6", C+["KEY-C2"], O("matrix", "group", "!room:[::1]"), "agent:main:matrix:group:!room%3A[%3A%3A1]")
cb("escape/percent", C+["KEY-C2"], O("slack", "group", "C%3A", user="%"), "agent:main:slack:group:C%253A:~%25")
cb("escape/tilde", C+["KEY-C2"], O("slack", "group", "~C", thread="~t"), "agent:main:slack:group:%7EC:%7Et")
cb("escape/controls", C+["KEY-C2"], O("telegram", "group", "a\nb", thread="\t", user="\u0000\u007f"), "agent:main:telegram:group:a%0Ab:%09:~%00%7F", P(t=True))
cb("keep/b64", C+["KEY-C2", "KEY-5"], O("signal", "group", "group:QUJD+/x=", thread="$Ab+c/d="), "agent:main:signal:group:group%3AQUJD+/x=:$Ab+c/d=")
cb("keep/unicode-case", C+["KEY-5", "ORIGIN-5"], O("matrix", "dm", "İSTANBUL Straße 🦀"), "agent:main:matrix:dm:İSTANBUL Straße 🦀")
cb("keep/whitespace", C+["KEY-5", "ORIGIN-5"], O("telegram", "dm", " 1 "), "agent:main:telegram:dm: 1 ")
cb("whatsapp/not-canonicalised", C+["KEY-C7"], O("whatsapp", "dm", "60123456789:47@s.whatsapp.net"), "agent:main:whatsapp:dm:60123456789%3A47@s.whatsapp.net")
cb("profile", C+["KEY-2"], O("telegram", "dm", "1"), "agent:coder:telegram:dm:1", P(profile="coder"))
cb("profile-main-is-default", C+["KEY-2"], O("telegram", "dm", "1"), "agent:main:telegram:dm:1", P(profile="main"))

# ---- canonical parse
cp("telegram-topic", ["KEY-C1", "KEY-C6"], "agent:main:telegram:group:-100:5:~42", F("main", "telegram", "group", "-100", "5", "42"))
cp("user-only", ["KEY-C1", "KEY-C6"], "agent:main:telegram:group:-100:~42", F("main", "telegram", "group", "-100", user="42"))
cp("escapes", ["KEY-C3", "KEY-C6"], "agent:main:matrix:group:!abc%3Amatrix.org:$e%3As:~@a%3As", F("main", "matrix", "group", "!abc:matrix.org", "$e:s", "@a:s"))
cp("profile", ["KEY-2", "KEY-C6"], "agent:a-b_1:slack:channel:C1", F("a-b_1", "slack", "channel", "C1"))
cp("unicode", ["KEY-5", "KEY-C6"], "agent:main:matrix:dm:İ🦀", F("main", "matrix", "dm", "İ🦀"))
cp("err/empty", ["KEY-6", "KEY-7"], "", error=E("missing_prefix", 0))
cp("err/prefix-case", ["KEY-6", "KEY-7"], "AGENT:main:telegram:dm:1", error=E("missing_prefix", 0))
cp("err/no-namespace", ["KEY-6", "KEY-7"], "agent:", error=E("empty", 6, "namespace"))
cp("err/bad-namespace", ["KEY-2", "KEY-7"], "agent:Main:telegram:dm:1", error=E("bad_token", 6, "namespace"))
cp("err/no-platform", ["KEY-6", "KEY-7"], "agent:main", error=E("missing", 10, "platform"))
cp("err/platform-case", ["ORIGIN-3", "KEY-7"], "agent:main:Telegram:dm:1", error=E("bad_token", 11, "platform"))
cp("err/chat-type", ["ORIGIN-4", "KEY-7"], "agent:main:telegram:grp:1", error=E("unknown_chat_type", 20))
cp("err/chat-type-case", ["ORIGIN-4", "KEY-7"], "agent:main:telegram:DM:1", error=E("unknown_chat_type", 20))
cp("err/no-chat", ["KEY-C1", "KEY-7"], "agent:main:telegram:dm", error=E("missing", 22, "chat_id"))
cp("err/empty-chat", ["KEY-C1", "KEY-7"], "agent:main:telegram:dm:", error=E("empty", 23, "chat_id"))
cp("err/raw-tilde", ["KEY-C3", "KEY-7"], "agent:main:telegram:group:a~b", error=E("unescaped", 27, "chat_id"))
cp("err/raw-newline", ["KEY-C3", "KEY-7"], "agent:main:telegram:group:a\nb", error=E("unescaped", 27, "chat_id"))
cp("err/lowercase-hex", ["KEY-C3", "KEY-7"], "agent:main:telegram:group:a%3a", error=E("bad_escape", 27, "chat_id"))
cp("err/needless-escape", ["KEY-C3", "KEY-7"], "agent:main:telegram:group:%41", error=E("bad_escape", 26, "chat_id"))
cp("err/truncated-escape", ["KEY-C3", "KEY-7"], "agent:main:telegram:group:ab%4", error=E("bad_escape", 28, "chat_id"))
cp("err/user-in-dm", ["KEY-C1", "KEY-7"], "agent:main:telegram:dm:1:~2", error=E("user_in_dm", 25))
cp("err/empty-user", ["KEY-C1", "KEY-7"], "agent:main:telegram:group:1:~", error=E("empty", 29, "user_id"))
cp("err/long-user", ["KEY-C1", "KEY-6", "KEY-7"], "agent:main:telegram:group:1:~" + "u" * 513, error=E("part_too_long", 29, "user_id"), note="the user part starts after its ~, as for empty")
# Round 5 of the clean room read these both ways and passed (ROUNDS.md):
cp("err/empty-namespace-mid", ["KEY-6", "KEY-7"], "agent::telegram:dm:1", error=E("empty", 6, "namespace"))
cp("err/empty-platform-mid", ["KEY-6", "KEY-7"], "agent:main::dm:1", error=E("empty", 11, "platform"))
cp("err/empty-chat-type-mid", ["KEY-6", "KEY-7"], "agent:main:telegram::1", error=E("empty", 20, "chat_type"))
cp("err/platform-long-and-bad", ["KEY-6", "KEY-7", "ORIGIN-3"], "agent:main:" + "P" * 33 + ":dm:1", error=E("part_too_long", 11, "platform"))
cp("err/raw-tilde-first", ["KEY-C3", "KEY-7"], "agent:main:telegram:group:~1", error=E("unescaped", 26, "chat_id"))
cp("err/two-threads", ["KEY-C1", "KEY-7"], "agent:main:telegram:group:1:2:3", error=E("trailing", 29))
cp("err/after-user", ["KEY-C1", "KEY-7"], "agent:main:telegram:group:1:~2:3", error=E("trailing", 30))
cp("err/too-long", ["KEY-1", "KEY-7"], "agent:main:telegram:dm:" + "1" * 9000, error=E("too_long", 8192))
cp("err/default-namespace", ["KEY-2", "KEY-C6", "KEY-7"], "agent:default:telegram:dm:1", error=E("bad_token", 6, "namespace"), note="build writes the profile default as main, so a key naming default would not survive build(parse(k)) (KEY-C6)")

# ---- hermes parse (KEY-H3/H4)
HH = ["KEY-H3", "KEY-H4"]
hp("dm-one-segment", HH, "agent:main:telegram:dm:123456789", HP("main", "telegram", "dm", K("123456789"), A, A))
hp("dm-two-segments", HH, "agent:main:telegram:dm:123:7", HP("main", "telegram", "dm", U("colon_split"), U("colon_split"), A),
   note="hermes' own parser says thread 7; chat could be \"123:7\"")
hp("group-one-segment", HH, "agent:main:telegram:group:-100", HP("main", "telegram", "group", K("-100"), A, A))
hp("group-sixth-part", HH+["KEY-H6"], "agent:main:telegram:group:-100:42", HP("main", "telegram", "group", U("colon_split"), U("colon_split"), U("colon_split")),
   note="thread 42, user 42, or chat \"-100:42\": the key cannot tell")
hp("matrix-room", HH+["KEY-H6"], "agent:main:matrix:group:!abc:matrix.org", HP("main", "matrix", "group", U("colon_split"), U("colon_split"), U("colon_split")))
hp("thread-discord", HH, "agent:main:discord:thread:222:222", HP("main", "discord", "thread", U("colon_split"), U("colon_split"), U("colon_split")))
hp("profile", HH+["KEY-2"], "agent:coder:slack:channel:C0123", HP("coder", "slack", "channel", K("C0123"), A, A))
hp("whatsapp-dm", HH+["KEY-H2"], "agent:main:whatsapp:dm:60123456789", HP("main", "whatsapp", "dm", U("whats_app_canonical"), U("whats_app_canonical"), U("whats_app_canonical")))
hp("whatsapp-dm-bare", HH+["KEY-H2"], "agent:main:whatsapp:dm", HP("main", "whatsapp", "dm", U("whats_app_canonical"), A, A))
hp("whatsapp-group", HH, "agent:main:whatsapp:group:120363000000@g.us", HP("main", "whatsapp", "group", K("120363000000@g.us"), A, A))
hp("err/no-chat", HH+["KEY-7"], "agent:main:telegram:group", error=E("missing", 25, "chat_id"))
hp("err/empty-chat", HH+["KEY-7"], "agent:main:telegram:dm:", error=E("empty", 23, "chat_id"))
hp("err/not-agent", ["KEY-6", "KEY-7"], "cron:main:telegram:dm:123", error=E("missing_prefix", 0))
hp("err/chat-type", ["ORIGIN-4", "KEY-7"], "agent:main:telegram:supergroup:1", error=E("unknown_chat_type", 20))
hp("err/too-long", ["KEY-1", "KEY-7"], "agent:main:telegram:dm:" + "9" * 9000, error=E("too_long", 8192))

# ---- origins
og("ok/minimal", ["ORIGIN-1", "ORIGIN-6"], O("telegram", "dm", "1"))
og("ok/everything", ["ORIGIN-1", "ORIGIN-6"], O("matrix", "group", "!a:b", "$e:b", "@u:b", "Émiliyan"))
og("ok/max-id", ["ORIGIN-2", "ORIGIN-6"], O("telegram", "dm", "x" * 512))
og("ok/nul-and-emoji", ["ORIGIN-2", "ORIGIN-6"], O("telegram", "dm", "\u0000🦀"))
og("err/empty-chat", ["ORIGIN-2"], O("telegram", "dm", ""), E("empty", field="chat_id"))
og("err/empty-thread", ["ORIGIN-2"], O("telegram", "group", "1", thread=""), E("empty", field="thread_id"))
og("err/empty-user", ["ORIGIN-2"], O("telegram", "group", "1", user=""), E("empty", field="user_id"))
og("err/long-id", ["ORIGIN-2"], O("telegram", "dm", "x" * 513), E("too_long", field="chat_id"))
og("err/long-multibyte-id", ["ORIGIN-2"], O("telegram", "dm", "İ" * 257), E("too_long", field="chat_id"))
og("err/long-name", ["ORIGIN-2"], O("telegram", "dm", "1", name="n" * 257), E("too_long", field="user_name"))
og("err/chat-type", ["ORIGIN-4"], O("telegram", "supergroup", "1"), E("unknown_chat_type"))
og("err/chat-type-case", ["ORIGIN-4"], O("telegram", "Group", "1"), E("unknown_chat_type"))
og("err/chat-type-empty", ["ORIGIN-4"], O("telegram", "", "1"), E("unknown_chat_type"))
og("err/platform-case", ["ORIGIN-3"], O("Telegram", "dm", "1"), E("bad_token", field="platform"))
og("err/platform-colon", ["ORIGIN-3"], O("tele:gram", "dm", "1"), E("bad_token", field="platform"))
og("err/platform-empty", ["ORIGIN-3"], O("", "dm", "1"), E("empty", field="platform"))
og("err/platform-long", ["ORIGIN-3"], O("p" * 33, "dm", "1"), E("too_long", field="platform"))
og("err/unknown-field", ["ORIGIN-6"], dict(O("telegram", "dm", "1"), chat="x"), E("malformed"))
og("err/number-platform", ["ORIGIN-6"], {"platform": 7, "chat_type": "dm", "chat_id": "1"}, E("malformed"))
og("err/two-fields-bad", ["ORIGIN-2", "ORIGIN-3"], O("Telegram", "dm", ""), E("bad_token", field="platform"))
og("err/number-id", ["ORIGIN-6"], {"platform": "discord", "chat_type": "dm", "chat_id": 1476968053597274124}, E("malformed"))

doc = {"suite": "procroute-keys", "suite_version": "0.3.0",
       "note": "Key vectors. hermes_build expectations were produced by hermes-agent 0.19.0 itself and are re-checked against it in CI (spec/harnesses/hermes-agent/key_diff.py --vectors).",
       "vectors": V}
print(len(V), file=sys.stderr)
json.dump(doc, open(sys.argv[1], "w"), ensure_ascii=False, indent=1)
