# A real SMTP server for the e-mail notification tests: aiosmtpd (Debian's python3-aiosmtpd,
# installed by scripts/ensure-test-tools) listening on 127.0.0.1, offering STARTTLS with the given
# certificate and AUTH PLAIN/LOGIN only after it (auth_require_tls), accepting one user. Every
# message that arrives is appended to the output file as one JSON line (envelope, decoded
# subject, headers and text body); "ready <port>" is printed
# once it listens.
#
#   python3 smtp-server.py <out.jsonl> <cert.pem> <key.pem> <user> <password>
import email, email.policy, json, socket, ssl, sys
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

out, cert, key, user, password = sys.argv[1:6]


class Handler:
    async def handle_DATA(self, server, session, envelope):
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with open(out, "a") as f:
            f.write(json.dumps({
                "subject": str(parsed["subject"]),
                "headers": {k.lower(): str(v) for k, v in parsed.items()},
                "body": parsed.get_body(preferencelist=("plain",)).get_content().replace("\r\n", "\n"),
                "mail_from": envelope.mail_from,
                "rcpt_tos": envelope.rcpt_tos,
                "data": envelope.content.decode("utf-8", "replace"),
                "tls": session.ssl is not None,
                "auth_user": session.auth_data.login.decode() if isinstance(session.auth_data, LoginPassword) else None,
            }) + "\n")
        return "250 OK"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user and auth_data.password.decode() == password
    return AuthResult(success=ok, handled=False, auth_data=auth_data if ok else None)


context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
context.load_cert_chain(cert, key)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
controller = Controller(Handler(), hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                        authenticator=authenticator, auth_require_tls=True, auth_required=True)
controller.start()
print(f"ready {port}", flush=True)
try:
    sys.stdin.read()  # serve until the test closes stdin or ends the process
finally:
    controller.stop()
