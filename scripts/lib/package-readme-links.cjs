/**
 * The package's README is the repository README with its links into the repository made absolute,
 * so they work on the registry's page: the guides in docs/ stay in the repository (the package
 * ships the README, the code and the migrations), and the README links them on GitHub.
 * In-page anchors and absolute URLs are left as they are.
 */
function absoluteLinks(readme, repositoryUrl) {
  const base = repositoryUrl.replace(/^git\+/, '').replace(/\.git$/, '');
  return readme.replace(
    /\]\((?!https?:|#|mailto:)([^)\s]+)\)/g,
    (_, path) => `](${base}/blob/main/${path.replace(/^\.\//, '')})`,
  );
}

module.exports = { absoluteLinks };
