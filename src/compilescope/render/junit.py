"""JUnit XML of `compilescope check`: one test case per rule, so CI systems list each rule as a test."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from ..analyses.check import RuleResult
from ..invisible import escape
from ..lazy_regex import lazy_compile

# What XML 1.0 cannot hold, even as a character reference: control characters but TAB, LF and CR; surrogates;
# U+FFFE and U+FFFF. Log text can hold them (ANSI colours, NUL), and ElementTree writes them as they are, so
# the file did not parse. They are written as \x1b-style escapes instead; so are DEL and the C1 controls, which
# XML holds but discourages (section 2.2) and a CI page shows as nothing (the terminal escapes them too).
_NOT_XML = lazy_compile("[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: escape(m.group(), "python"), text)


def junit_xml(results: list[RuleResult], source: str) -> bytes:
    failures = sum(not r.passed for r in results)
    suites = ET.Element("testsuites", tests=str(len(results)), failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name="compilescope check", tests=str(len(results)),
                          failures=str(failures), errors="0", skipped="0")
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="log", value=_xml_text(source))
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="compilescope.check", name=_xml_text(r.name))
        if r.passed:
            ET.SubElement(case, "system-out").text = _xml_text(r.message)
        else:
            failure = ET.SubElement(case, "failure", message=_xml_text(r.message), type=_xml_text(r.name))
            failure.text = _xml_text("\n".join([r.description, *r.details]))
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)
