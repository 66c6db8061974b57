"""JUnit XML of `compilescope check`: one test case per rule, so CI systems list each rule as a test."""

from __future__ import annotations

from xml.etree import ElementTree as ET

from ..analyses.check import RuleResult


def junit_xml(results: list[RuleResult], source: str) -> bytes:
    failures = sum(not r.passed for r in results)
    suites = ET.Element("testsuites", tests=str(len(results)), failures=str(failures))
    suite = ET.SubElement(suites, "testsuite", name="compilescope check", tests=str(len(results)),
                          failures=str(failures), errors="0", skipped="0")
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="log", value=source)
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="compilescope.check", name=r.name)
        if r.passed:
            ET.SubElement(case, "system-out").text = r.message
        else:
            failure = ET.SubElement(case, "failure", message=r.message, type=r.name)
            failure.text = "\n".join([r.description, *r.details])
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)
