// doc:begin Sources/ResiliencePolicyFile/ResiliencePolicyFile.docc/ResiliencePolicyFile.md
import ResiliencePolicyFile

func loadThePolicyFile() throws {  // doc:hidden
    let policy = try PolicyFile.load(path: "my-policy.yaml").policy
    _ = policy  // doc:hidden
}  // doc:hidden
// doc:end
