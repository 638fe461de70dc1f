//! The skills the everything-server serves (the Skills extension, SEP-2640): two skills, one
//! under an organizational prefix, with supporting files in nested directories so that
//! `resources/directory/read` has subdirectories to list.

use mcp_server::skills::{ServedSkill, SkillError, SkillSet};

/// `skill://acme/billing/refunds/SKILL.md`.
pub const REFUNDS_MD: &str = "---
name: refunds
description: Process customer refund requests per company policy
license: Apache-2.0
metadata:
  version: \"2.1.0\"
  owner: billing
---

# Refunds

Check the order, then answer with the matching template from `examples/`.
";

/// `skill://pdf-processing/SKILL.md`.
pub const PDF_MD: &str = "---
name: pdf-processing
description: Extract, fill, and assemble PDF documents
---

# PDF processing

Choose the matching template from `templates/`; form fields are described in
`references/FORMS.md`.
";

/// The fixture's skills.
///
/// # Errors
///
/// Never for this static content (the tests build it).
pub fn set() -> Result<SkillSet, SkillError> {
    let refunds = ServedSkill::new(REFUNDS_MD)?.prefix("acme/billing")?.file(
        "examples/email.md",
        "Dear customer, your refund is on its way.\n",
    )?;
    let pdf = ServedSkill::new(PDF_MD)?
        .file(
            "references/FORMS.md",
            "# Forms\n\nEvery field of the invoice form.\n",
        )?
        .file("templates/invoice.md", "# Invoice\n")?
        .file("templates/regional/eu-invoice.md", "# EU invoice\n")?;
    SkillSet::new().with(refunds)?.with(pdf)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_fixture_skills_are_valid() {
        let set = super::set().expect("valid");
        for skill in set.skills() {
            skill.validate().expect("a valid entry");
        }
        assert_eq!(set.skills().count(), 2);
    }
}
