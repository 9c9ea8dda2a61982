"""The transport URL's password is never logged, whatever it holds: what is logged is
what oslo.messaging's own parser reads in the URL, rebuilt without the passwords.

Passwords and user names hold every URL delimiter (``@ : / ? # , % [ ]``), percent-escapes
(valid or not) and any Unicode; URLs list one to three hosts (cluster URLs), each written
percent-encoded as oslo.messaging documents, or raw as operators sometimes type them."""
import logging
import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tacker_hwaffinity.openstack import notifications

pytest.importorskip("oslo_messaging")

# In every generated password, never in a host or user name: the password's forms
# (raw, percent-encoded, percent-decoded) all hold it, so a logged text without the
# password cannot hold them by chance (a one-character password is in any text).
MARK = "QzX"
FRAGMENTS = list("@:/?#,%[]") + ["%40", "%2F", "%3A", "%2C", "%25", "%zz", "%4", "%E2%82", "::"]
SECRET_TEXT = st.lists(st.one_of(st.sampled_from(FRAGMENTS),
                                 st.characters(exclude_categories=("Cs",))),
                       max_size=8).map("".join)
PASSWORDS = st.tuples(SECRET_TEXT, SECRET_TEXT).map(lambda t: t[0] + MARK + t[1])
USERNAMES = SECRET_TEXT.filter(lambda u: MARK not in u)
HOSTS = st.lists(st.tuples(st.sampled_from(["rabbit-1", "mq.example.org", "10.0.0.2",
                                            "[fd00::3]"]),
                           st.one_of(st.none(), st.integers(1, 65535))),
                 min_size=1, max_size=3)


def _url(user, password, hosts, vhost, encoded):
    if encoded:
        user, password = (urllib.parse.quote(v, "") for v in (user, password))
    netlocs = ["%s:%s@%s%s" % (user, password, h, "" if p is None else ":%d" % p)
               for h, p in hosts]
    return "rabbit://%s/%s" % (",".join(netlocs), vhost)


def _forms(password):
    return {password, urllib.parse.quote(password, ""), urllib.parse.quote(password),
            urllib.parse.unquote(password)}


def _read_as_written(url, password, hosts):
    """Whether oslo.messaging reads URL as the user wrote it: each host with PASSWORD."""
    try:
        parsed = notifications.parse(url)
    except ValueError:
        return False
    return [(h.password, h.hostname, h.port) for h in parsed.hosts] == [
        (urllib.parse.unquote(password), h.strip("[]"), p) for h, p in hosts]


@given(user=USERNAMES, password=PASSWORDS, hosts=HOSTS,
       vhost=st.sampled_from(["", "nova", "a%2Fb"]), encoded=st.booleans())
def test_the_logged_url_never_holds_the_password(user, password, hosts, vhost, encoded):
    url = _url(user, password, hosts, vhost, encoded)
    shown = notifications.redacted(url)
    for form in _forms(password):
        assert form not in shown
    assert shown.startswith("rabbit://")
    # whether oslo.messaging reads even an encoded URL as written depends on the Python
    # under it (3.13's urlsplit refuses '[fd00::3],:p@h'): what it reads is what is shown
    if _read_as_written(url, password if not encoded else urllib.parse.quote(password, ""),
                        hosts):
        for host, port in hosts:   # what oslo.messaging connects to is still said
            assert host + ("" if port is None else ":%d" % port) in shown


def test_a_password_holding_at_signs_is_hidden_whole():
    """oslo.messaging ends the userinfo at the LAST @ of a host (rsplit), so the password
    of this URL is 'K7@xq9!Zr2w'."""
    url = "rabbit://nova:K7@xq9!Zr2w@rabbit-1/"
    shown = notifications.redacted(url)
    assert "xq9!Zr2w" not in shown
    assert shown == "rabbit://nova:***@rabbit-1/"


def test_a_password_oslo_messaging_would_read_as_a_host_shows_no_host():
    """An unescaped ',' splits the password; oslo.messaging would read its tail as a host."""
    shown = notifications.redacted("rabbit://nova:a:b,mq1@mq1/")
    assert "a:b" not in shown and "mq1" not in shown


def test_the_listener_never_logs_the_url_of_its_failure(caplog):
    """urllib refuses this netloc (a fullwidth @ is an @ under NFKC) with a message
    holding the whole netloc; the listener logs neither."""
    password = "s3cr3t\uff20Qx"
    listener = notifications.NotificationListener(
        "rabbit://nova:%s@rabbit-1:5672/" % password, lambda e, s: None,
        log=logging.getLogger("test.notifications"))
    with caplog.at_level(logging.DEBUG):
        listener.start()
        listener.stop(timeout=30)
    assert "not listening" in caplog.text
    assert "s3cr3t" not in caplog.text and "Qx" not in caplog.text


def test_an_error_of_the_transport_is_logged_without_the_password():
    parsed = notifications.parse("rabbit://nova:p%40ss%2Fw0rd@rabbit-1/")
    text = notifications._masked("cannot log in to rabbit://nova:p%40ss%2Fw0rd@rabbit-1 "
                                 "as nova with p@ss/w0rd", parsed)
    assert "w0rd" not in text and "rabbit-1" in text


def test_oslo_messagings_warning_on_a_split_password_lists_no_part_of_it(caplog):
    """'nova:Pa:ss,w0rd:y@mq1': an unescaped ',' makes oslo.messaging read 'nova:Pa:ss' as
    a host without a password, and warn, listing it."""
    with caplog.at_level(logging.DEBUG):
        notifications.redacted("rabbit://nova:Pa:ss,w0rd:y@mq1/")
    assert "All hosts must be set" in caplog.text
    assert "Pa:ss" not in caplog.text and "w0rd" not in caplog.text
