// The transfer template in New from Template: with the base fetched it
// previews and creates "frozen base + new head"; without it the preview says
// how to fetch it, Create is disabled, and opening it anyway is an error
// message, not a crash.
#include "gui/project_context.h"
#include "gui/template_dialog.h"
#include "gui_test_util.h"

#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <deepcanvas/transfer.h>

#include <QDialogButtonBox>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <cstdlib>
#include <filesystem>

namespace dc::test {
namespace {

class TransferTemplate : public SampleWindowTest {
 protected:
  void SetUp() override {
    dir = tempDir();
    ::setenv("DEEPCANVAS_PRETRAINED_DIR", dir.toUtf8().constData(), 1);
    SampleWindowTest::SetUp();
  }
  void TearDown() override { ::unsetenv("DEEPCANVAS_PRETRAINED_DIR"); }

  // A stand-in base (the real one is fetched from PyPI, which tests never do).
  void writeBase() {
    const BaseFiles f = base_files(pretrained_base("efficientnet_lite0"));
    std::filesystem::create_directories(f.dir);
    Project base = load_project(sourcePath("sample_data/sample_project.dcproj").toStdString());
    Graph& g = base.graph;
    g.node(g.find_by_name("input")->id).attrs.set("shape", std::vector<int64_t>{3, 64, 64});
    save_project(base, f.project);
    Plan p(g, 1);
    p.init_params(1);
    save_safetensors(f.weights, p.state(), {});
  }

  // The dialog with the transfer row selected: (info text, Create enabled).
  std::pair<QString, bool> preview() {
    gui::TemplateDialog dlg(w.get());
    dlg.show();
    bool found = false;
    for (int i = 0; i < dlg.list()->count(); ++i)
      if (dlg.list()->item(i)->text().startsWith("Transfer: EfficientNet-Lite0")) {
        dlg.list()->setCurrentRow(i);
        found = true;
      }
    EXPECT_TRUE(found);
    QString info;
    for (QLabel* l : dlg.findChildren<QLabel*>()) info += l->text();
    const bool enabled =
        dlg.findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok)->isEnabled();
    return {info, enabled};
  }

  QString dir;
};

TEST_F(TransferTemplate, AbsentBaseSaysHowToFetchItAndCannotBeCreated) {
  const auto [info, enabled] = preview();
  EXPECT_TRUE(info.contains("fetch-pretrained.sh")) << info.toStdString();
  EXPECT_TRUE(info.contains("is not on this computer")) << info.toStdString();
  EXPECT_FALSE(enabled);
  const Graph before = g();
  EXPECT_FALSE(w->newFromTemplate("transfer:efficientnet_lite0"));
  ASSERT_EQ(errors.size(), 1);
  EXPECT_TRUE(errors[0].contains("fetch-pretrained.sh")) << errors[0].toStdString();
  EXPECT_EQ(g(), before);  // the open project is untouched
}

TEST_F(TransferTemplate, PresentBaseCreatesAFrozenBaseWithANewHead) {
  writeBase();
  const auto [info, enabled] = preview();
  EXPECT_TRUE(enabled) << info.toStdString();
  EXPECT_TRUE(info.contains("Starts from")) << info.toStdString();
  ASSERT_TRUE(w->newFromTemplate("transfer:efficientnet_lite0")) << errors.join("\n").toStdString();
  EXPECT_TRUE(errors.isEmpty());
  // The sample's pool2 is its last feature map: the Dense layers after it
  // are replaced by the head, and everything up to it is frozen.
  EXPECT_EQ(g().find_by_name("dense1"), nullptr);
  ASSERT_NE(g().find_by_name("head_fc"), nullptr);
  EXPECT_TRUE(g().find_by_name("head_fc")->trainable);
  EXPECT_FALSE(g().find_by_name("conv1")->trainable);
  EXPECT_FALSE(g().find_by_name("pool2")->trainable);
  const Project& p = w->context()->project();
  EXPECT_EQ(p.dataset.preprocess.channels, 3);
  EXPECT_EQ(p.training.init_weights, base_files(pretrained_base("efficientnet_lite0")).weights);
}

}  // namespace
}  // namespace dc::test
