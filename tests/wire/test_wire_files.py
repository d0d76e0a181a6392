"""Files a server reads from Responses content parts and writes as Chat Completions parts: decoded
once from every spelling a client may use, sent on byte for byte, refused by name when unreadable."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from so_middleware import DataContent, FunctionResultContent, HostedFileContent
from so_middleware.wire import chat
from so_middleware.wire.responses import WireError
from so_middleware.wire.responses_items import item_to_message

PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <<>> endobj\n\x00\xff"
PDF64 = base64.b64encode(PDF).decode()
TEXT = "na\u00efve caf\u00e9, line one\nline two \u2713\n"
TEXT64 = base64.b64encode(TEXT.encode()).decode()


def _sent(part: dict[str, Any]) -> dict[str, Any]:
    """The Chat Completions part a Responses content part becomes."""
    message = item_to_message({"type": "message", "role": "user", "content": [part]}, "input[0]")
    assert message is not None
    return chat.part_to_wire(message.contents[0])


def _file_bytes(sent: dict[str, Any]) -> bytes:
    uri = sent["file"]["file_data"]
    assert uri.startswith("data:application/pdf;base64,"), uri
    return base64.b64decode(uri.partition(",")[2], validate=True)


@pytest.mark.parametrize(
    ("file_data", "filename"),
    [
        (f"data:application/pdf;base64,{PDF64}", "a.pdf"),
        (f"DATA:application/pdf;base64,{PDF64}", "a.pdf"),
        (f"Data:Application/PDF;Base64,{PDF64}", "a.pdf"),
        (f"data:application/pdf;name=a.pdf;base64,{PDF64}", "a.pdf"),
        (PDF64, "a.pdf"),  # bare base64: the type from the file name
        ("\n".join(PDF64[i : i + 8] for i in range(0, len(PDF64), 8)), "a.pdf"),  # line-wrapped, as base64(1) writes
        (f"data:;base64,{PDF64}", "a.pdf"),  # a data URL naming no type: the file name's
    ],
    ids=["data-url", "upper-scheme", "mixed-case", "parameter", "bare", "wrapped", "no-type"],
)
def test_a_binary_file_reaches_the_backend_byte_for_byte(file_data: str, filename: str) -> None:
    sent = _sent({"type": "input_file", "filename": filename, "file_data": file_data})
    assert sent["type"] == "file" and sent["file"]["filename"] == filename
    assert _file_bytes(sent) == PDF


@pytest.mark.parametrize(
    "file_data",
    [
        f"data:text/plain;base64,{TEXT64}",
        f"DATA:TEXT/PLAIN;BASE64,{TEXT64}",
        f"data:text/plain;charset=utf-8;base64,{TEXT64}",
        "data:text/plain,na%C3%AFve%20caf%C3%A9,%20line%20one%0Aline%20two%20%E2%9C%93%0A",  # percent-encoded
        f"data:text/plain,{TEXT}",  # neither: the characters themselves
        TEXT64,  # bare, named notes.txt
    ],
    ids=["base64", "upper", "charset", "percent", "raw", "bare"],
)
def test_a_text_file_reaches_the_backend_as_its_text(file_data: str) -> None:
    """A text file goes as a text part (what every Chat Completions server reads), holding the file's text."""
    assert _sent({"type": "input_file", "filename": "notes.txt", "file_data": file_data}) == {"type": "text",
                                                                                              "text": TEXT}  # fmt: skip


def test_a_json_file_without_a_name_is_text_and_bytes_without_a_type_are_a_file() -> None:
    raw = b'{"a": [1, 2]}'
    assert _sent({"type": "input_file", "file_data": "data:application/json;base64," + base64.b64encode(raw).decode()}) == {
        "type": "text", "text": raw.decode()}  # fmt: skip
    sent = _sent({"type": "input_file", "file_data": PDF64})  # no name, no type: opaque bytes
    assert sent["file"]["file_data"] == f"data:application/octet-stream;base64,{PDF64}"


def test_a_text_file_that_is_not_utf8_goes_as_a_file_unchanged() -> None:
    """Decoding it into text would replace bytes; as a file its bytes stay as sent."""
    latin1 = "caf\u00e9".encode("latin-1")
    sent = _sent({"type": "input_file", "filename": "a.txt", "file_data": base64.b64encode(latin1).decode()})
    assert sent == {"type": "file", "file": {"file_data": "data:text/plain;base64,Y2Fm6Q==", "filename": "a.txt"}}
    assert chat.part_to_wire(DataContent(latin1, "text/plain")) == {
        "type": "file", "file": {"file_data": "data:text/plain;base64,Y2Fm6Q==", "filename": "file"}}  # fmt: skip


@pytest.mark.parametrize(
    "file_data",
    ["not base64!", PDF64[:-1], PDF64.replace("+", "-"), "data:application/pdf;base64,%%%", "data:application/pdf"],
    ids=["text", "unpadded", "url-safe-alphabet", "data-url-garbage", "no-comma"],
)
def test_unreadable_file_data_names_its_field(file_data: str) -> None:
    assert "+" in PDF64 or file_data != PDF64  # the url-safe case changes something
    with pytest.raises(WireError) as caught:
        item_to_message({"role": "user", "content": [{"type": "input_file", "filename": "a.pdf",
                                                      "file_data": file_data}]}, "input[2]")  # fmt: skip
    assert caught.value.param == "input[2].content[0].file_data"
    assert "input[2].content[0].file_data" in str(caught.value)


def test_an_image_data_url_in_any_case_is_sent_once_encoded() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x01"
    url = "DATA:image/png;base64," + base64.b64encode(png).decode()
    sent = _sent({"type": "input_image", "image_url": url})
    assert sent == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()},
    }
    remote = _sent({"type": "input_image", "image_url": "HTTPS://example.com/a.png"})
    assert remote == {"type": "image_url", "image_url": {"url": "HTTPS://example.com/a.png"}}


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://example.com/a.png", "/etc/passwd", "aGVsbG8="])
def test_an_image_url_of_another_scheme_is_refused(url: str) -> None:
    with pytest.raises(WireError) as caught:
        item_to_message({"role": "user", "content": [{"type": "input_image", "image_url": url}]}, "input[0]")
    assert caught.value.param == "input[0].content[0].image_url"


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_file", "file_url": "http://169.254.169.254/latest/meta-data/"},
        {"type": "input_file", "file_url": "http://10.0.0.1/a.pdf", "file_data": PDF64, "filename": "a.pdf"},
        {"type": "input_file", "file_url": "http://10.0.0.1/a.pdf", "file_id": "file-abc"},
    ],
    ids=["alone", "beside-file-data", "beside-file-id"],
)
def test_a_file_url_is_refused_in_a_message_and_in_a_tool_output(part: dict[str, Any]) -> None:
    with pytest.raises(WireError) as caught:
        item_to_message({"role": "user", "content": [{"type": "input_text", "text": "hi"}, part]}, "input[0]")
    assert caught.value.param == "input[0].content[1].file_url"
    for kind in ("function_call_output", "custom_tool_call_output"):
        output = [{"type": "input_text", "text": "see"}, part]
        with pytest.raises(WireError) as caught:
            item_to_message({"type": kind, "call_id": "c1", "output": output}, "input[2]")
        assert caught.value.param == "input[2].output[1].file_url" and "fetches no URL" in str(caught.value)


def test_a_tool_output_list_of_readable_parts_is_accepted() -> None:
    output = [{"type": "input_text", "text": "see"}, {"type": "input_file", "file_id": "file-abc"},
              {"type": "input_file", "filename": "a.pdf", "file_data": PDF64}]  # fmt: skip
    message = item_to_message({"type": "function_call_output", "call_id": "c1", "output": output}, "input[1]")
    assert message is not None and message.contents == [FunctionResultContent("c1", output)]
    bad = [{"type": "input_file", "file_data": "%%%"}]
    with pytest.raises(WireError) as caught:
        item_to_message({"type": "function_call_output", "call_id": "c1", "output": bad}, "input[1]")
    assert caught.value.param == "input[1].output[0].file_data"


def test_a_file_id_is_sent_as_a_file_id() -> None:
    part = {"type": "input_file", "file_id": "file-abc", "filename": "a.pdf"}
    message = item_to_message({"role": "user", "content": [part]}, "input[0]")
    assert message is not None and message.contents == [HostedFileContent("file-abc", name="a.pdf")]
