"""tagged_binary: a Go binary built for a platform with extra Go build tags.

The artifact tests compare it with the release binaries: the WSL2 launcher must be byte-identical to the
Linux launcher of its architecture built with the tag `wsl2`, so the WSL2 platform changes the artifact
through that tag and nothing else.
"""

def _platform_and_tags_impl(_settings, attr):
    return {
        "//command_line_option:platforms": str(attr.platform),
        "@rules_go//go/config:tags": attr.gotags,
    }

_platform_and_tags = transition(
    implementation = _platform_and_tags_impl,
    inputs = [],
    outputs = [
        "//command_line_option:platforms",
        "@rules_go//go/config:tags",
    ],
)

def _tagged_binary_impl(ctx):
    exe = ctx.attr.target[0][DefaultInfo].files_to_run.executable
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.symlink(output = out, target_file = exe)
    return [DefaultInfo(files = depset([out]))]

tagged_binary = rule(
    implementation = _tagged_binary_impl,
    doc = "target (a go_binary) built for platform with the Go build tags gotags, linked as <name>.",
    attrs = {
        "gotags": attr.string_list(mandatory = True),
        "platform": attr.label(mandatory = True),
        "target": attr.label(cfg = _platform_and_tags, mandatory = True),
    },
)
